//! `corral mcp`: the SDK's agent tools as a Model Context Protocol server
//! over stdio, built on `rmcp`, the official Rust MCP SDK.
//!
//! One session is one sandbox. It is created on the first `tools/call`
//! (listing tools costs nothing) and destroyed when the session ends —
//! the client closes stdin, the transport fails, or the process gets one
//! of the ending signals (`super::ending_signals`). Where the backend
//! can, the sandbox is also bound to this process (`bound_to_creator`),
//! so a `kill -9` leaves nothing running. stdout carries nothing but protocol messages;
//! diagnostics (the sandbox's id, a failed destroy) go to stderr.
//!
//! A tool call answers with the dispatcher's JSON object (see
//! `corral_sdk::tools`) twice: as `structuredContent`, and as one text
//! block for clients that read only text. `isError` is set when the answer
//! is `ok: false`. Calling a tool that does not exist is a protocol error
//! (`invalid params`), as the MCP specification asks.

use std::sync::Arc;

use corral_backend::{Backend, CreateRequest, Labels};
use corral_sdk::tools::{self, Tool};
use corral_sdk::{Operation, Sandbox, SandboxError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::args::McpArgs;
use crate::backends;
use crate::error::{CliError, CliResult};

mod lines;

use super::ending_signals;

/// The label value marking sandboxes of MCP sessions (`corral=mcp`).
const LABEL_VALUE: &str = "mcp";

/// Runs `corral mcp`.
pub async fn mcp(args: McpArgs) -> CliResult {
    let ending = ending_signals::listen();
    let backend = backends::open(args.backend.backend.as_deref()).await?;
    let server = McpServer {
        backend,
        sandbox: Arc::new(OnceCell::new()),
    };
    let sandbox = server.sandbox.clone();
    let served = serve(server, ending).await;
    let destroyed = match sandbox.get() {
        Some(sb) => sb.destroy().await.map(|()| {
            eprintln!("corral mcp: sandbox {} destroyed", sb.id());
        }),
        None => Ok(()),
    };
    match (served, destroyed) {
        (Ok(()), Ok(())) => Ok(0),
        (Err(e), _) => Err(e),
        (Ok(()), Err(e)) => Err(CliError::failure(e.code.as_str(), e.to_string())),
    }
}

/// Serves one session on stdio, framed by [`lines`] (a line that is not a
/// JSON-RPC message gets its error reply), until it ends or a termination
/// signal arrives; every reply reaches stdout before this returns.
async fn serve(server: McpServer, ending: ending_signals::Ending) -> Result<(), CliError> {
    let (framed, stdout) = lines::stdio();
    let served = serve_on(server, framed, ending).await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stdout).await;
    served
}

/// Serves one session on `transport` until it ends or a termination signal
/// arrives.
async fn serve_on(
    server: McpServer,
    transport: lines::Framed,
    ending: ending_signals::Ending,
) -> Result<(), CliError> {
    let running = server
        .serve(transport)
        .await
        .map_err(|e| CliError::failure("io", format!("the MCP session did not start: {e}")))?;
    let stop = running.cancellation_token();
    let signals = ending.wait();
    tokio::select! {
        ended = running.waiting() => {
            ended.map_err(|e| CliError::failure("io", format!("the MCP session failed: {e}")))?;
        }
        () = signals => {
            eprintln!("corral mcp: stopping on a signal");
            stop.cancel();
        }
    }
    Ok(())
}

/// The MCP server of one session.
#[derive(Clone)]
struct McpServer {
    backend: Arc<dyn Backend>,
    sandbox: Arc<OnceCell<Sandbox>>,
}

impl McpServer {
    /// The session's sandbox, created on first use. It is created through
    /// the backend, not `Sandbox::create`, which writes `corral=1` over any
    /// `corral` label: an MCP session's sandbox is `corral=mcp`.
    async fn sandbox(&self) -> Result<&Sandbox, SandboxError> {
        self.sandbox
            .get_or_try_init(|| async {
                let provider = self.backend.name().to_string();
                let mut labels = Labels::new();
                labels
                    .insert(corral_backend::CORRAL_LABEL, LABEL_VALUE)
                    .expect("the corral label is a label");
                super::creator::label(&mut labels);
                let info = self
                    .backend
                    .create(CreateRequest {
                        labels,
                        bound_to_creator: self.backend.capabilities().enforces.bound_to_creator,
                        ..CreateRequest::default()
                    })
                    .await
                    .map_err(|e| SandboxError::from_backend(&provider, Operation::Create, e))?;
                let sb = match Sandbox::connect_id(self.backend.clone(), &info.id).await {
                    Ok(sb) => sb,
                    Err(e) => {
                        let _ = self.backend.destroy(&info.id).await;
                        return Err(e);
                    }
                };
                eprintln!("corral mcp: sandbox {} created", sb.id());
                Ok(sb)
            })
            .await
    }
}

/// A tool's definition in rmcp's terms.
fn mcp_tool(tool: Tool) -> rmcp::model::Tool {
    let schema = match tool.input_schema() {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    rmcp::model::Tool::new(tool.name(), tool.description(), Arc::new(schema))
}

/// A dispatcher answer as a tool result.
fn tool_result(answer: Value) -> CallToolResult {
    let ok = answer["ok"] == Value::Bool(true);
    let content = vec![ContentBlock::text(answer.to_string())];
    let mut result = if ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    result.structured_content = Some(answer);
    result
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("corral", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools run in one corral sandbox, created on the first call and destroyed \
                 when this session ends. Paths are sandbox paths; relative ones start at \
                 /workspace.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            Tool::ALL.into_iter().map(mcp_tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if Tool::from_name(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                Tool::unknown(&request.name),
                None,
            ));
        }
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let answer = match self.sandbox().await {
            Ok(sb) => tools::dispatch(sb, &request.name, args).await,
            Err(e) => tools::error_answer(&e),
        };
        Ok(tool_result(answer).into())
    }
}
