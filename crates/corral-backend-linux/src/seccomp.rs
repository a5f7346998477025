//! The default seccomp filter every sandboxed process runs under.
//!
//! The filter is in the spirit of Docker's default profile: **default allow**
//! for the system calls this table knows, with a list of them refused with
//! `EPERM` (so programs see an ordinary permission error and carry on), and
//! **allow-lists** where an argument decides: socket families,
//! `personality`, and system call numbers (anything newer than the table is
//! refused). It is built once per host process
//! ([`default_program`], a `OnceLock`) and handed to `corral-init` as raw bytes
//! ([`program_bytes`]); it is never compiled per sandbox. [`install`] loads it
//! without allocating; the init's PID 1 does so once, on itself, after its
//! setup and before its first spawn, so every process of the sandbox
//! inherits the one filter (and `no_new_privs`) through `fork` and PID 1
//! runs under it too (`crate::init`).
//!
//! # What is refused, and why
//!
//! | group | system calls | reason |
//! |---|---|---|
//! | kernel code | `kexec_load`, `kexec_file_load`, `init_module`, `finit_module`, `delete_module`, `reboot` | replace or extend the running kernel, or stop the host |
//! | kernel attack surface | `bpf`, `perf_event_open`, `userfaultfd`, `io_uring_*` | large, frequently exploited interfaces; `io_uring` also performs operations the filter never sees |
//! | keyrings | `keyctl`, `add_key`, `request_key` | the kernel keyring is not namespaced |
//! | other processes | `ptrace`, `process_vm_readv`, `process_vm_writev`, `kcmp`, `pidfd_getfd`, `process_madvise` | inspect or change another process's memory or file table |
//! | mounts | `mount`, `umount2`, `pivot_root`, `move_mount`, `open_tree`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr` (and `open_tree_attr`, from [`FIRST_UNKNOWN`] on) | the sandbox's filesystem view is fixed by the runtime before exec |
//! | namespaces | `setns`, `unshare`, `clone` with any `CLONE_NEW*` flag, `clone3` | a new namespace can undo the isolation (and user namespaces widen kernel attack surface) |
//! | host-global state | `swapon`, `swapoff`, `syslog`, `acct`, `quotactl`, `quotactl_fd`, `settimeofday`, `clock_settime`, `clock_adjtime`, `adjtimex`, `vhangup`, `fanotify_init` | change or read state shared with the host |
//! | file handles | `open_by_handle_at`, `name_to_handle_at` | open files by handle, bypassing the mount view (the "shocker" escape) |
//! | obsolete or hardware | `iopl`, `ioperm`, `uselib`, `_sysctl` (x86_64), `lookup_dcookie`, `nfsservctl` | raw port access or long-dead interfaces nobody needs |
//! | raw network | `socket(AF_PACKET, ..)`, `socket(AF_INET/AF_INET6, SOCK_RAW or SOCK_PACKET, ..)` | forge packets below the network policy |
//! | socket families | `socket` of any family but `AF_UNIX`, `AF_INET`, `AF_INET6` and `AF_NETLINK` with `NETLINK_ROUTE`; `socketpair` of any but `AF_UNIX` | an allow-list: `AF_VSOCK` is not network-namespaced (on a VM host it reaches the hypervisor whatever `network: none` says), `AF_XDP`, `AF_ALG`, Bluetooth, CAN and the other netlink protocols (audit, uevents, netfilter, ...) are kernel surface no workload needs |
//! | execution domain | `personality` with anything but `PER_LINUX` (0) or the query `0xffffffff`; `modify_ldt` (x86_64) | a foreign personality (`PER_LINUX32`, `ADDR_NO_RANDOMIZE`, `READ_IMPLIES_EXEC`) weakens the address-space layout; the LDT is a long history of kernel bugs |
//! | as Docker refuses without `CAP_SYS_NICE` or always | `mbind`, `set_mempolicy`, `set_mempolicy_home_node`, `migrate_pages`, `move_pages`, `sysfs` and `ustat` (x86_64) | memory placement of other processes, and obsolete host-global interfaces |
//! | system calls newer than this filter | every number from [`FIRST_UNKNOWN`] on | a step toward an allow-list: a kernel interface added after this table was written is refused (`ENOSYS`, so libc falls back) until it is reviewed here |
//!
//! `clone3` is refused with `ENOSYS` rather than `EPERM`: its flags live in
//! memory a seccomp filter cannot read, and `ENOSYS` makes libc fall back to
//! `clone`, whose flags the filter does check. `io_uring_*` are also refused
//! with `ENOSYS` so that libraries fall back to ordinary system calls.
//! `AF_NETLINK` sockets stay allowed for `NETLINK_ROUTE` only (glibc's
//! `getifaddrs` and `ip` need it). A socket family off the list fails with
//! `EAFNOSUPPORT` and another netlink protocol with `EPROTONOSUPPORT` — what
//! a kernel built without them answers, which libraries treat as "not
//! available" — while packet and raw IP sockets keep failing with `EPERM`.
//!
//! `vm86` and `vm86old` exist only for 32-bit x86: the filter checks the
//! audit architecture first and refuses every system call made through a
//! foreign ABI (i386 `int 0x80`, x32) with `ENOSYS`, which covers them.
//! Supported architectures: x86_64 and aarch64.

use std::sync::OnceLock;

use seccompiler::{BpfProgram, sock_filter};

/// How a refused system call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// `EPERM`: an ordinary permission error.
    Perm,
    /// `ENOSYS`: "not implemented", so callers fall back.
    NoSys,
}

macro_rules! refused {
    ($( $(#[$meta:meta])* $name:ident = $nr:ident => $how:ident, )*) => {
        /// The system calls the default filter refuses unconditionally on
        /// this architecture (see the module documentation for the reasons;
        /// `clone` and `socket` are refused only for some arguments, see
        /// [`REFUSED_BY_ARGUMENT`]).
        pub const DENIED: &[&str] = &[ $( $(#[$meta])* stringify!($name), )* ];
        /// `(number, refusal)` for every entry of [`DENIED`], same order.
        const TABLE: &[(libc::c_long, Refusal)] =
            &[ $( $(#[$meta])* (libc::$nr, Refusal::$how), )* ];
    };
}

refused! {
    kexec_load = SYS_kexec_load => Perm,
    kexec_file_load = SYS_kexec_file_load => Perm,
    init_module = SYS_init_module => Perm,
    finit_module = SYS_finit_module => Perm,
    delete_module = SYS_delete_module => Perm,
    reboot = SYS_reboot => Perm,
    bpf = SYS_bpf => Perm,
    perf_event_open = SYS_perf_event_open => Perm,
    userfaultfd = SYS_userfaultfd => Perm,
    io_uring_setup = SYS_io_uring_setup => NoSys,
    io_uring_enter = SYS_io_uring_enter => NoSys,
    io_uring_register = SYS_io_uring_register => NoSys,
    keyctl = SYS_keyctl => Perm,
    add_key = SYS_add_key => Perm,
    request_key = SYS_request_key => Perm,
    ptrace = SYS_ptrace => Perm,
    process_vm_readv = SYS_process_vm_readv => Perm,
    process_vm_writev = SYS_process_vm_writev => Perm,
    kcmp = SYS_kcmp => Perm,
    pidfd_getfd = SYS_pidfd_getfd => Perm,
    process_madvise = SYS_process_madvise => Perm,
    mount = SYS_mount => Perm,
    umount2 = SYS_umount2 => Perm,
    pivot_root = SYS_pivot_root => Perm,
    move_mount = SYS_move_mount => Perm,
    open_tree = SYS_open_tree => Perm,
    fsopen = SYS_fsopen => Perm,
    fsconfig = SYS_fsconfig => Perm,
    fsmount = SYS_fsmount => Perm,
    fspick = SYS_fspick => Perm,
    mount_setattr = SYS_mount_setattr => Perm,
    setns = SYS_setns => Perm,
    unshare = SYS_unshare => Perm,
    clone3 = SYS_clone3 => NoSys,
    swapon = SYS_swapon => Perm,
    swapoff = SYS_swapoff => Perm,
    syslog = SYS_syslog => Perm,
    acct = SYS_acct => Perm,
    quotactl = SYS_quotactl => Perm,
    quotactl_fd = SYS_quotactl_fd => Perm,
    settimeofday = SYS_settimeofday => Perm,
    clock_settime = SYS_clock_settime => Perm,
    clock_adjtime = SYS_clock_adjtime => Perm,
    adjtimex = SYS_adjtimex => Perm,
    vhangup = SYS_vhangup => Perm,
    fanotify_init = SYS_fanotify_init => Perm,
    open_by_handle_at = SYS_open_by_handle_at => Perm,
    name_to_handle_at = SYS_name_to_handle_at => Perm,
    lookup_dcookie = SYS_lookup_dcookie => Perm,
    nfsservctl = SYS_nfsservctl => Perm,
    mbind = SYS_mbind => Perm,
    set_mempolicy = SYS_set_mempolicy => Perm,
    set_mempolicy_home_node = SYS_set_mempolicy_home_node => Perm,
    migrate_pages = SYS_migrate_pages => Perm,
    move_pages = SYS_move_pages => Perm,
    #[cfg(target_arch = "x86_64")]
    modify_ldt = SYS_modify_ldt => Perm,
    #[cfg(target_arch = "x86_64")]
    sysfs = SYS_sysfs => Perm,
    #[cfg(target_arch = "x86_64")]
    ustat = SYS_ustat => Perm,
    #[cfg(target_arch = "x86_64")]
    iopl = SYS_iopl => Perm,
    #[cfg(target_arch = "x86_64")]
    ioperm = SYS_ioperm => Perm,
    #[cfg(target_arch = "x86_64")]
    uselib = SYS_uselib => Perm,
    #[cfg(target_arch = "x86_64")]
    _sysctl = SYS__sysctl => Perm,
}

/// The system calls refused only for some arguments: `clone` with any
/// `CLONE_NEW*` flag, `socket` off the family allow-list and for packet and
/// raw IP sockets, `socketpair` but for `AF_UNIX`, and `personality` but
/// for `PER_LINUX` and the query.
pub const REFUSED_BY_ARGUMENT: &[&str] = &["clone", "socket", "socketpair", "personality"];

/// The first system call number this filter lets no workload reach: every
/// number from here on is refused with `ENOSYS` (shared by x86_64 and
/// aarch64 from 424 on). Reviewed up to 466; 467 (`open_tree_attr`, a mount
/// call: refused as the others are), 468 and 469 (`file_getattr`,
/// `file_setattr`, which no libc needs yet) and everything newer start here.
pub const FIRST_UNKNOWN: u32 = 467;

// Every jump in the program is forward and at most 255 instructions long;
// the table is static, so this holds for every build.
const _: () = assert!(TABLE.len() + 40 < 255);

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the corral seccomp filter supports x86_64 and aarch64 only");

/// x32 system calls carry this bit in their number on x86_64.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// The `clone` flags that create a namespace. `CLONE_NEWTIME` shares its bit
/// with the exit signal in `clone` and is only usable through `clone3`.
const CLONE_NEW_MASK: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// The obsolete `SOCK_PACKET` socket type (a packet socket under `AF_INET`).
const SOCK_PACKET: u32 = 10;

/// The netlink protocol of routing and link information.
const NETLINK_ROUTE: u32 = 0;

/// `personality(0xffffffff)` queries the current personality.
const PERSONALITY_QUERY: u32 = 0xffff_ffff;

// Classic BPF opcodes (linux/bpf_common.h): BPF_LD | BPF_W | BPF_ABS, ...
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JGE_K: u16 = 0x05 | 0x30;
const BPF_JSET_K: u16 = 0x05 | 0x40;
const BPF_AND_K: u16 = 0x04 | 0x50;
const BPF_RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

// Offsets in `struct seccomp_data` (little-endian: low word of each arg).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG0: u32 = 16;
const OFF_ARG1: u32 = 24;
const OFF_ARG2: u32 = 32;

/// A jump target while the program is assembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    /// The next instruction.
    Next,
    Allow,
    Eperm,
    Enosys,
    Eafnosupport,
    Eprotonosupport,
    Clone,
    Socket,
    Socketpair,
    Personality,
    Inet,
    Netlink,
}

/// One instruction before jump offsets are resolved.
enum Insn {
    Stmt(u16, u32),
    Jump(u16, u32, Label, Label),
    Mark(Label),
}

fn jump_offset(from: usize, to: Label, marks: &[(Label, usize)]) -> u8 {
    if to == Label::Next {
        return 0;
    }
    let target = marks
        .iter()
        .find(|(label, _)| *label == to)
        .map_or(from + 1, |(_, at)| *at);
    // Forward only, and bounded by the const assertion above.
    u8::try_from(target.saturating_sub(from + 1)).unwrap_or(u8::MAX)
}

fn assemble(insns: &[Insn]) -> BpfProgram {
    let mut marks = Vec::new();
    let mut at = 0;
    for insn in insns {
        match insn {
            Insn::Mark(label) => marks.push((*label, at)),
            Insn::Stmt(..) | Insn::Jump(..) => at += 1,
        }
    }
    let mut program = Vec::with_capacity(at);
    for insn in insns {
        let here = program.len();
        match *insn {
            Insn::Mark(_) => {}
            Insn::Stmt(code, k) => program.push(sock_filter {
                code,
                jt: 0,
                jf: 0,
                k,
            }),
            Insn::Jump(code, k, jt, jf) => program.push(sock_filter {
                code,
                jt: jump_offset(here, jt, &marks),
                jf: jump_offset(here, jf, &marks),
                k,
            }),
        }
    }
    program
}

/// Builds a fresh copy of the default filter. The backend never calls this
/// per sandbox: it uses [`default_program`]; this exists to measure the cost.
pub fn compile_default() -> BpfProgram {
    use Insn::{Jump, Mark, Stmt};
    let mut insns = vec![
        Stmt(BPF_LD_W_ABS, OFF_ARCH),
        Jump(BPF_JEQ_K, AUDIT_ARCH, Label::Next, Label::Enosys),
        Stmt(BPF_LD_W_ABS, OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    insns.push(Jump(BPF_JGE_K, X32_SYSCALL_BIT, Label::Enosys, Label::Next));
    insns.push(Jump(BPF_JGE_K, FIRST_UNKNOWN, Label::Enosys, Label::Next));
    for (number, to) in [
        (libc::SYS_clone, Label::Clone),
        (libc::SYS_socket, Label::Socket),
        (libc::SYS_socketpair, Label::Socketpair),
        (libc::SYS_personality, Label::Personality),
    ] {
        insns.push(Jump(BPF_JEQ_K, nr(number), to, Label::Next));
    }
    for &(number, how) in TABLE {
        let to = match how {
            Refusal::Perm => Label::Eperm,
            Refusal::NoSys => Label::Enosys,
        };
        insns.push(Jump(BPF_JEQ_K, nr(number), to, Label::Next));
    }
    insns.extend([
        Stmt(BPF_RET_K, RET_ALLOW),
        // clone: refuse any namespace flag in the low word of `flags`.
        Mark(Label::Clone),
        Stmt(BPF_LD_W_ABS, OFF_ARG0),
        Jump(BPF_JSET_K, CLONE_NEW_MASK, Label::Eperm, Label::Allow),
        // socket: the family allow-list; packet sockets refused as raw ones.
        Mark(Label::Socket),
        Stmt(BPF_LD_W_ABS, OFF_ARG0),
        Jump(BPF_JEQ_K, libc::AF_UNIX as u32, Label::Allow, Label::Next),
        Jump(BPF_JEQ_K, libc::AF_INET as u32, Label::Inet, Label::Next),
        Jump(BPF_JEQ_K, libc::AF_INET6 as u32, Label::Inet, Label::Next),
        Jump(
            BPF_JEQ_K,
            libc::AF_NETLINK as u32,
            Label::Netlink,
            Label::Next,
        ),
        Jump(
            BPF_JEQ_K,
            libc::AF_PACKET as u32,
            Label::Eperm,
            Label::Eafnosupport,
        ),
        // netlink: routing only.
        Mark(Label::Netlink),
        Stmt(BPF_LD_W_ABS, OFF_ARG2),
        Jump(
            BPF_JEQ_K,
            NETLINK_ROUTE,
            Label::Allow,
            Label::Eprotonosupport,
        ),
        // socketpair: unix only.
        Mark(Label::Socketpair),
        Stmt(BPF_LD_W_ABS, OFF_ARG0),
        Jump(
            BPF_JEQ_K,
            libc::AF_UNIX as u32,
            Label::Allow,
            Label::Eafnosupport,
        ),
        // personality: the default one, or the query.
        Mark(Label::Personality),
        Stmt(BPF_LD_W_ABS, OFF_ARG0),
        Jump(BPF_JEQ_K, 0, Label::Allow, Label::Next),
        Jump(BPF_JEQ_K, PERSONALITY_QUERY, Label::Allow, Label::Eperm),
        // AF_INET / AF_INET6: refuse raw and SOCK_PACKET sockets.
        Mark(Label::Inet),
        Stmt(BPF_LD_W_ABS, OFF_ARG1),
        Stmt(BPF_AND_K, 0xf),
        Jump(BPF_JEQ_K, libc::SOCK_RAW as u32, Label::Eperm, Label::Next),
        Jump(BPF_JEQ_K, SOCK_PACKET, Label::Eperm, Label::Allow),
        Mark(Label::Allow),
        Stmt(BPF_RET_K, RET_ALLOW),
        Mark(Label::Eperm),
        Stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32),
        Mark(Label::Eafnosupport),
        Stmt(BPF_RET_K, RET_ERRNO | libc::EAFNOSUPPORT as u32),
        Mark(Label::Eprotonosupport),
        Stmt(BPF_RET_K, RET_ERRNO | libc::EPROTONOSUPPORT as u32),
        Mark(Label::Enosys),
        Stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32),
    ]);
    assemble(&insns)
}

/// A system call number as the 32-bit value the filter compares.
fn nr(number: libc::c_long) -> u32 {
    u32::try_from(number).unwrap_or(u32::MAX)
}

/// The default filter, compiled once per process and shared by every sandbox.
pub fn default_program() -> &'static BpfProgram {
    static PROGRAM: OnceLock<BpfProgram> = OnceLock::new();
    PROGRAM.get_or_init(compile_default)
}

/// The default filter as the raw `struct sock_filter` array (8 bytes per
/// instruction, native endianness), ready to hand to `corral-init`.
pub fn program_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let program = default_program();
        let mut bytes = Vec::with_capacity(program.len() * 8);
        for insn in program {
            bytes.extend_from_slice(&insn.code.to_ne_bytes());
            bytes.push(insn.jt);
            bytes.push(insn.jf);
            bytes.extend_from_slice(&insn.k.to_ne_bytes());
        }
        bytes
    })
}

/// Installs a serialized filter (as from [`program_bytes`]) on the calling
/// thread; the init does it (see [`crate::init`]).
pub use crate::init::filter::install;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_names_agree() {
        assert_eq!(DENIED.len(), TABLE.len());
        assert!(DENIED.contains(&"clone3"));
        assert!(!DENIED.contains(&"clone"));
    }

    #[test]
    fn program_is_well_formed() {
        let program = default_program();
        assert!(program.len() < 4096);
        assert_eq!(program_bytes().len(), program.len() * 8);
        // Every jump stays inside the program.
        for (at, insn) in program.iter().enumerate() {
            if insn.code & 0x07 == 0x05 {
                assert!(at + 1 + usize::from(insn.jt) < program.len());
                assert!(at + 1 + usize::from(insn.jf) < program.len());
            }
        }
        // The last four instructions are the refusals.
        let tail: Vec<u32> = program.iter().rev().take(4).map(|i| i.k).collect();
        let errnos = [
            libc::ENOSYS,
            libc::EPROTONOSUPPORT,
            libc::EAFNOSUPPORT,
            libc::EPERM,
        ];
        let expected: Vec<u32> = errnos.iter().map(|e| RET_ERRNO | *e as u32).collect();
        assert_eq!(tail, expected);
    }

    #[test]
    fn install_rejects_malformed_programs() {
        for bad in [&[][..], &[0u8; 7][..]] {
            let err = install(bad).expect_err("malformed program accepted");
            assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
        }
    }
}
