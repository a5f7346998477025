//! Probing one destination from inside an instance, and reading the verdict.

use corral_contract::{ExitCause, HostPort, InstanceId, SandboxExecutionResult};

use crate::exec::quote;
use crate::failure::{Failure, shown};
use crate::scope::contract::ContractScope;
use crate::target::{ConformanceTarget, EgressProbe};

/// What a probe concluded about one destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A connection to the destination existed.
    Reached,
    /// No connection could be made.
    Blocked,
    /// The probe proved nothing (missing tool, a signal, an unknown status);
    /// the text says what happened.
    Inconclusive(String),
}

/// The bytes of probe output kept: the verdict reads the exit only.
const PROBE_OUTPUT_BYTES: u64 = 4096;

/// curl's exit codes that mean no connection was made: 6 (could not
/// resolve host), 7 (failed to connect), 28 (operation timed out).
const CURL_BLOCKED: &[u8] = &[6, 7, 28];

/// curl's exit codes that happen only once a connection exists: 0, and
/// failures of the exchange that follows (35 TLS handshake, 52 empty reply,
/// 56 receive failure, 60 certificate, 16 HTTP/2 framing, 18 partial file,
/// 8 weird server reply, 47 too many redirects, 92 HTTP/2 stream).
const CURL_REACHED: &[u8] = &[0, 8, 16, 18, 35, 47, 52, 56, 60, 92];

impl EgressProbe {
    /// The script that probes `destination`.
    pub(crate) fn script(self, destination: &HostPort) -> String {
        match self {
            Self::Curl => format!(
                "curl -sS --connect-timeout 5 --max-time 10 {}",
                quote(&format!("http://{destination}/"))
            ),
        }
    }

    /// The verdict of one settlement.
    pub(crate) fn verdict(self, result: &SandboxExecutionResult) -> Verdict {
        match self {
            Self::Curl => match result.exit {
                ExitCause::TimedOut => Verdict::Blocked,
                ExitCause::Signal(signal) => {
                    Verdict::Inconclusive(format!("curl ended by signal {signal}"))
                }
                ExitCause::Code(code) => {
                    let code = code.as_u8();
                    if CURL_BLOCKED.contains(&code) {
                        Verdict::Blocked
                    } else if CURL_REACHED.contains(&code) {
                        Verdict::Reached
                    } else {
                        Verdict::Inconclusive(format!(
                            "curl exit code {code}, stderr {}",
                            shown(&result.stderr.content)
                        ))
                    }
                }
            },
        }
    }
}

impl<T: ConformanceTarget> ContractScope<'_, T> {
    /// Probes `destination` from instance `id` with `probe`; an inconclusive
    /// probe fails the case.
    pub(crate) async fn probe(
        &self,
        id: &InstanceId,
        probe: EgressProbe,
        destination: &HostPort,
    ) -> Result<Verdict, Failure> {
        let script = probe.script(destination);
        let result = self.execute(id, None, &script, PROBE_OUTPUT_BYTES).await?;
        match probe.verdict(&result) {
            Verdict::Inconclusive(why) => Err(Failure::new(format_args!(
                "probing {destination} proved nothing: {why}"
            ))),
            verdict => Ok(verdict),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_contract::{ExitCode, Interval, OutputBytes, SignalName, StreamCapture, Timestamp};

    fn settled(exit: ExitCause) -> SandboxExecutionResult {
        let t = Timestamp::parse("2026-01-01T00:00:00.000Z").unwrap();
        SandboxExecutionResult {
            exit,
            interval: Interval::new(t, t).unwrap(),
            stdout: StreamCapture::default(),
            stderr: StreamCapture {
                content: OutputBytes::new(b"sh: curl: not found\n".to_vec()).unwrap(),
                truncated: false,
            },
        }
    }

    #[test]
    fn curl_exits_map_to_verdicts() {
        let code = |c: u8| settled(ExitCause::Code(ExitCode::from(c)));
        let p = EgressProbe::Curl;
        assert_eq!(p.verdict(&code(0)), Verdict::Reached);
        assert_eq!(p.verdict(&code(52)), Verdict::Reached);
        assert_eq!(p.verdict(&code(7)), Verdict::Blocked);
        assert_eq!(p.verdict(&code(6)), Verdict::Blocked);
        assert_eq!(p.verdict(&code(28)), Verdict::Blocked);
        assert_eq!(p.verdict(&settled(ExitCause::TimedOut)), Verdict::Blocked);
        let Verdict::Inconclusive(why) = p.verdict(&code(127)) else {
            panic!("a missing curl proves nothing");
        };
        assert!(why.contains("127") && why.contains("not found"), "{why}");
        assert!(matches!(
            p.verdict(&settled(ExitCause::Signal(SignalName::Sigsegv))),
            Verdict::Inconclusive(_)
        ));
    }

    #[test]
    fn the_curl_script_names_the_destination() {
        let d = HostPort::new("api.example.com:443").unwrap();
        assert_eq!(
            EgressProbe::Curl.script(&d),
            "curl -sS --connect-timeout 5 --max-time 10 'http://api.example.com:443/'"
        );
    }
}
