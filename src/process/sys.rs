//! The system calls a supervisor makes, without `errno`.
//!
//! A supervisor started with `clone(CLONE_VM)` (`launch.rs`) runs in the server's memory with
//! the thread pointer of the server thread that started it, so it must not touch thread-local
//! storage: libc's wrappers write `errno` there on failure, which would change the error a
//! server thread is about to read. On x86_64 and aarch64 these calls are made directly (the
//! `syscall` / `svc` instruction) and return `-errno`; elsewhere they go through libc (only the
//! forked supervisor uses them there, which has memory and `errno` of its own).
//!
//! Every function returns the kernel's result: `>= 0` on success, `-errno` on failure.

#![allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)]

use libc::{c_int, c_long};

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[inline(always)]
unsafe fn call(n: c_long, a: usize, b: usize, c: usize, d: usize, e: usize, f: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for system call `n`; `syscall` clobbers rcx
    // and r11 only.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") n as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            in("r8") e,
            in("r9") f,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags)
        );
    }
    ret
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
#[inline(always)]
unsafe fn call(n: c_long, a: usize, b: usize, c: usize, d: usize, e: usize, f: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for system call `n`.
    unsafe {
        core::arch::asm!(
            "svc 0",
            in("x8") n as usize,
            inlateout("x0") a as isize => ret,
            in("x1") b,
            in("x2") c,
            in("x3") d,
            in("x4") e,
            in("x5") f,
            options(nostack, preserves_flags)
        );
    }
    ret
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use super::call;
    use libc::{c_int, c_long, pid_t};

    #[inline(always)]
    pub unsafe fn sys(n: c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
        // SAFETY: forwarded from the caller.
        unsafe { call(n, a, b, c, d, 0, 0) }
    }

    pub unsafe fn kill(pid: pid_t, sig: c_int) -> isize {
        // SAFETY: no memory is passed.
        unsafe { sys(libc::SYS_kill, pid as usize, sig as usize, 0, 0) }
    }

    pub unsafe fn wait4(pid: pid_t, status: *mut c_int, options: c_int) -> isize {
        // SAFETY: `status` is a valid out pointer (the caller's).
        unsafe {
            sys(
                libc::SYS_wait4,
                pid as usize,
                status as usize,
                options as usize,
                0,
            )
        }
    }

    pub unsafe fn getpid() -> pid_t {
        // SAFETY: no arguments.
        unsafe { sys(libc::SYS_getpid, 0, 0, 0, 0) as pid_t }
    }

    pub unsafe fn getppid() -> pid_t {
        // SAFETY: no arguments.
        unsafe { sys(libc::SYS_getppid, 0, 0, 0, 0) as pid_t }
    }

    pub unsafe fn open_read(path: *const libc::c_char, flags: c_int) -> isize {
        // SAFETY: `path` is NUL-terminated (the caller's).
        unsafe {
            sys(
                libc::SYS_openat,
                libc::AT_FDCWD as usize,
                path as usize,
                (libc::O_RDONLY | libc::O_CLOEXEC | flags) as usize,
                0,
            )
        }
    }

    pub unsafe fn read(fd: c_int, buf: *mut u8, len: usize) -> isize {
        // SAFETY: `buf` holds `len` bytes (the caller's).
        unsafe { sys(libc::SYS_read, fd as usize, buf as usize, len, 0) }
    }

    pub unsafe fn close(fd: c_int) -> isize {
        // SAFETY: no memory is passed.
        unsafe { sys(libc::SYS_close, fd as usize, 0, 0, 0) }
    }

    pub unsafe fn getdents64(fd: c_int, buf: *mut u8, len: usize) -> isize {
        // SAFETY: `buf` holds `len` bytes (the caller's).
        unsafe { sys(libc::SYS_getdents64, fd as usize, buf as usize, len, 0) }
    }

    pub unsafe fn sleep(t: &libc::timespec) -> isize {
        // SAFETY: `t` is a valid timespec.
        unsafe {
            sys(
                libc::SYS_clock_nanosleep,
                libc::CLOCK_MONOTONIC as usize,
                0,
                core::ptr::from_ref(t) as usize,
                0,
            )
        }
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod imp {
    use libc::{c_int, pid_t};

    fn ret(r: isize) -> isize {
        if r < 0 {
            -(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as isize)
        } else {
            r
        }
    }

    pub unsafe fn kill(pid: pid_t, sig: c_int) -> isize {
        // SAFETY: no memory is passed.
        ret(unsafe { libc::kill(pid, sig) } as isize)
    }

    pub unsafe fn wait4(pid: pid_t, status: *mut c_int, options: c_int) -> isize {
        // SAFETY: `status` is a valid out pointer (the caller's).
        ret(unsafe { libc::waitpid(pid, status, options) } as isize)
    }

    pub unsafe fn getpid() -> pid_t {
        // SAFETY: no arguments.
        unsafe { libc::getpid() }
    }

    pub unsafe fn getppid() -> pid_t {
        // SAFETY: no arguments.
        unsafe { libc::getppid() }
    }

    pub unsafe fn open_read(path: *const libc::c_char, flags: c_int) -> isize {
        // SAFETY: `path` is NUL-terminated (the caller's).
        ret(unsafe { libc::open(path, libc::O_RDONLY | libc::O_CLOEXEC | flags) } as isize)
    }

    pub unsafe fn read(fd: c_int, buf: *mut u8, len: usize) -> isize {
        // SAFETY: `buf` holds `len` bytes (the caller's).
        ret(unsafe { libc::read(fd, buf.cast(), len) })
    }

    pub unsafe fn close(fd: c_int) -> isize {
        // SAFETY: no memory is passed.
        ret(unsafe { libc::close(fd) } as isize)
    }

    pub unsafe fn sleep(t: &libc::timespec) -> isize {
        // SAFETY: `t` is a valid timespec.
        ret(unsafe { libc::nanosleep(t, std::ptr::null_mut()) } as isize)
    }
}

pub(super) use imp::*;

/// Sleeps one millisecond.
pub(super) unsafe fn pause_1ms() {
    let t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: a valid timespec.
    unsafe {
        sleep(&t);
    }
}

/// The `errno` of a failed call (`-r`), or 0.
pub(super) fn errno(r: isize) -> c_int {
    if r < 0 { (-r) as c_int } else { 0 }
}
