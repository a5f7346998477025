//! The SDK's operations: the closed vocabulary a [`crate::SandboxError`]
//! names as the call that failed (`SandboxError [code] provider.operation:
//! message`). One table gives each its name, so a call can only fail as an
//! operation this table lists, and a caller can match on it.

use std::fmt;

use crate::tools::Tool;

macro_rules! operations {
    ($($variant:ident => $name:literal,)*) => {
        /// One SDK operation, by the name errors display.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Operation {
            $(#[doc = concat!("`", $name, "`.")] $variant,)*
        }

        impl Operation {
            /// Every operation, in the table's order.
            pub const ALL: &'static [Operation] = &[$(Operation::$variant),*];

            /// The name errors display, e.g. `files.edit`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Operation::$variant => $name,)*
                }
            }
        }
    };
}

operations! {
    Create => "create",
    Connect => "connect",
    Find => "find",
    List => "list",
    GetOrCreate => "get_or_create",
    Destroy => "destroy",
    Run => "run",
    Preview => "preview",
    Snapshot => "snapshot",
    Pause => "pause",
    Resume => "resume",
    Gc => "gc",
    FilesRead => "files.read",
    FilesReadRange => "files.read_range",
    FilesWrite => "files.write",
    FilesList => "files.list",
    FilesStat => "files.stat",
    FilesExists => "files.exists",
    FilesRemove => "files.remove",
    FilesMkdir => "files.mkdir",
    FilesUpload => "files.upload",
    FilesDownload => "files.download",
    FilesEdit => "files.edit",
    FilesSearch => "files.search",
    FilesWatch => "files.watch",
    FilesMark => "files.mark",
    FilesChanges => "files.changes",
    GitAdd => "git.add",
    GitBranch => "git.branch",
    GitCheckout => "git.checkout",
    GitClone => "git.clone",
    GitCommit => "git.commit",
    GitDiff => "git.diff",
    GitLog => "git.log",
    GitPull => "git.pull",
    GitPush => "git.push",
    GitStatus => "git.status",
    ProcessesAttach => "processes.attach",
    ProcessesKill => "processes.kill",
    ProcessesList => "processes.list",
    ProcessesLogs => "processes.logs",
    ProcessesReady => "processes.ready",
    ProcessesStart => "processes.start",
    ProcessesStatus => "processes.status",
    ProcessesWait => "processes.wait",
    ToolDispatch => "tools.dispatch",
    ToolRun => "tools.run",
    ToolReadFile => "tools.read_file",
    ToolWriteFile => "tools.write_file",
    ToolEditFile => "tools.edit_file",
    ToolSearch => "tools.search",
    ToolListFiles => "tools.list_files",
}

impl Operation {
    /// The operation a tool call's errors name.
    pub const fn of_tool(tool: Tool) -> Self {
        match tool {
            Tool::Run => Operation::ToolRun,
            Tool::ReadFile => Operation::ToolReadFile,
            Tool::WriteFile => Operation::ToolWriteFile,
            Tool::EditFile => Operation::ToolEditFile,
            Tool::Search => Operation::ToolSearch,
            Tool::ListFiles => Operation::ToolListFiles,
        }
    }

    /// The part after the family's dot (`git.push` → `push`), or the whole
    /// name for an operation outside a family.
    pub fn member(self) -> &'static str {
        let name = self.as_str();
        name.split_once('.').map_or(name, |(_, member)| member)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Operation {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_display_as_themselves() {
        let mut seen = std::collections::BTreeSet::new();
        for op in Operation::ALL {
            assert!(seen.insert(op.as_str()), "{op} twice");
            assert_eq!(op.to_string(), op.as_str());
            assert_eq!(*op, op.as_str());
        }
    }

    #[test]
    fn every_tool_has_its_operation_named_after_it() {
        for tool in Tool::ALL {
            assert_eq!(
                Operation::of_tool(tool).as_str(),
                format!("tools.{}", tool.name())
            );
        }
    }

    #[test]
    fn members_drop_the_family() {
        let table = [
            (Operation::GitPush, "push"),
            (Operation::FilesReadRange, "read_range"),
            (Operation::Run, "run"),
        ];
        for (op, member) in table {
            assert_eq!(op.member(), member, "{op}");
        }
    }
}
