// SPDX-License-Identifier: MIT
//! `Error`: a negative errno from libdevq plus the `devq_errmsg()` line of
//! the call that failed, captured right there (the message is per thread and
//! the next failing call replaces it).
use std::ffi::CStr;
use std::fmt;

/// A failed devq call: `errno` is the positive errno value (`EINVAL` is 22)
/// and `message` the one-line detail libdevq gave, naming the thing and the
/// fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub errno: i32,
    pub message: String,
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// The errno values devq documents, for matching on [`Error::errno`]
/// (declared here so that the crate needs no libc crate; Linux values).
pub mod errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EIO: i32 = 5;
    pub const EBADF: i32 = 9;
    pub const EAGAIN: i32 = 11;
    pub const ENOMEM: i32 = 12;
    pub const EFAULT: i32 = 14;
    pub const EBUSY: i32 = 16;
    pub const ENODEV: i32 = 19;
    pub const EINVAL: i32 = 22;
    pub const ERANGE: i32 = 34;
    pub const EDEADLK: i32 = 35;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ENOTSUP: i32 = 95;
    pub const ETIMEDOUT: i32 = 110;
    pub const EALREADY: i32 = 114;
    pub const ECANCELED: i32 = 125;
}

impl Error {
    /// The error for return code `rc` (< 0) of the call that just failed on
    /// this thread, with its `devq_errmsg()`.
    pub(crate) fn last(rc: i32) -> Error {
        // SAFETY: devq_errmsg never returns NULL and the string stays valid
        // until this thread's next devq call.
        let msg = unsafe { CStr::from_ptr(devq_sys::devq_errmsg()) };
        Error { errno: -rc, message: msg.to_string_lossy().into_owned() }
    }

    /// An error that did not come from a libdevq call (a status delivered
    /// to a callback, or one this crate detects itself).
    pub fn new(errno: i32, message: impl Into<String>) -> Error {
        Error { errno, message: message.into() }
    }

    /// The negative errno, as the C API returns it.
    pub fn code(&self) -> i32 {
        -self.errno
    }

    pub fn is_timeout(&self) -> bool {
        self.errno == errno::ETIMEDOUT
    }
}

/// `Ok(rc)` for rc >= 0, else the thread's error for it.
pub(crate) fn check(rc: i32) -> Result<i32> {
    if rc < 0 {
        Err(Error::last(rc))
    } else {
        Ok(rc)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "devq: errno {}", self.errno)
        } else {
            write!(f, "{} (errno {})", self.message, self.errno)
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> std::io::Error {
        let kind = std::io::Error::from_raw_os_error(e.errno).kind();
        std::io::Error::new(kind, e)
    }
}

/// Nanoseconds for a timeout: `Duration::ZERO` polls, `Duration::MAX` (or
/// anything past u64 nanoseconds, 584 years) waits forever.
pub(crate) fn timeout_ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(devq_sys::DEVQ_TIMEOUT_INFINITE)
}

/// A `&str` as a C string, or `EINVAL` naming `what` when it holds a NUL.
pub(crate) fn cstring(s: &str, what: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s)
        .map_err(|_| Error::new(errno::EINVAL, format!("{}: '{}' contains a NUL byte", what, s.escape_debug())))
}

/// A fixed-size C char array (NUL-terminated inside) as a String.
pub(crate) fn fixed_str(chars: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
