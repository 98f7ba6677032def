//! The Windows side of the file seam: handles opened with `FILE_FLAG_OPEN_REPARSE_POINT`, so
//! the system follows no symlink, junction or mount point; a link met on the way is resolved by
//! the caller's walk (like a Unix symlink), only while it stays below the root.
//!
//! Windows has no `openat`, so a child is opened by its path. Two things make that race-free:
//! a folder in use is held open without `FILE_SHARE_DELETE` (nothing below it can be renamed
//! or removed, nor the folder itself, until it is closed), and every file opened is checked by
//! its handle's final path (`GetFinalPathNameByHandleW`), which must be below the root's: the
//! bytes read are those of a file below the root, whatever was swapped where. The final path
//! has the long names, so the caller judges visibility on the names the file really has (an
//! 8.3 short name aliasing a hidden file is that hidden file).

use std::borrow::Cow;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{Error, ErrorKind};
use std::os::windows::ffi::OsStringExt as _;
use std::os::windows::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::os::windows::io::AsRawHandle as _;
use std::path::{Component, Path, PathBuf, Prefix};

use windows_sys::Win32::Storage::FileSystem::{
    FILE_ATTRIBUTE_HIDDEN, FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_BACKUP_SEMANTICS,
    FILE_FLAG_OPEN_REPARSE_POINT, FILE_NAME_NORMALIZED, FILE_SHARE_DELETE, FILE_SHARE_READ,
    FILE_SHARE_WRITE, GetFinalPathNameByHandleW, VOLUME_NAME_DOS,
};

use super::{Kind, OpenError, Stat, Version};

/// An open folder: its handle (held without `FILE_SHARE_DELETE`) and the path it was opened by.
#[derive(Debug)]
pub(crate) struct Dir {
    _handle: File,
    path: PathBuf,
}

/// Opens `path` itself, never what a reparse point at its end points to.
fn open_here(path: &Path, folder: bool) -> std::io::Result<File> {
    let mut flags = FILE_FLAG_OPEN_REPARSE_POINT;
    let mut share = FILE_SHARE_READ | FILE_SHARE_WRITE;
    if folder {
        flags |= FILE_FLAG_BACKUP_SEMANTICS;
    } else {
        // A file being read may be replaced or removed meanwhile (an editor's save): the
        // handle keeps reading what it opened.
        share |= FILE_SHARE_DELETE;
    }
    OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .share_mode(share)
        .open(path)
}

fn is_reparse(meta: &Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

impl Dir {
    /// Opens the folder at `path` (canonical: a reparse point at its end is refused).
    pub(crate) fn open(path: &Path) -> Result<Dir, OpenError> {
        let handle = open_here(path, true).map_err(not_found_or)?;
        let meta = handle.metadata().map_err(not_found_or)?;
        if !meta.is_dir() || is_reparse(&meta) {
            return Err(OpenError::NotFound);
        }
        // The folder opened is the one at `path` by its own names: not another reached through
        // something the system followed (Wine's view of a Unix symlink), nor by a short name
        // (`GIT~1` for `.git`).
        let path = plain_path(path);
        if final_path(&handle).is_none_or(|real| rel_below(&real, &path).as_deref() != Some("")) {
            return Err(OpenError::NotFound);
        }
        Ok(Dir {
            _handle: handle,
            path,
        })
    }

    /// Opens the child folder `name`, not through a link.
    pub(crate) fn open_dir(&self, name: &str) -> Result<Dir, OpenError> {
        if !name_allowed(name) {
            return Err(OpenError::NotFound);
        }
        Dir::open(&self.path.join(name))
    }

    /// The child `name`, not followed.
    pub(crate) fn stat(&self, name: &str) -> Result<Stat, OpenError> {
        if !name_allowed(name) {
            return Err(OpenError::NotFound);
        }
        let meta = std::fs::symlink_metadata(self.path.join(name)).map_err(not_found_or)?;
        Ok(stat_of(&meta))
    }

    /// No version to check a kept read against on Windows.
    pub(crate) fn stat_path(&self, _rel: &str) -> Option<Stat> {
        None
    }

    /// The target of the link `name`, as written (a symlink's, a junction's).
    pub(crate) fn read_link(&self, name: &str) -> Result<String, OpenError> {
        if !name_allowed(name) {
            return Err(OpenError::NotFound);
        }
        let target = std::fs::read_link(self.path.join(name)).map_err(not_found_or)?;
        target
            .into_os_string()
            .into_string()
            .map_err(|_| OpenError::NotFound)
    }

    /// Opens the regular file `name`, not through a link, checked on the handle: a regular
    /// file (a device or a pipe has no file information; a reparse point is a link).
    pub(crate) fn open_file(&self, name: &str) -> Result<(File, Stat), OpenError> {
        if !name_allowed(name) {
            return Err(OpenError::NotFound);
        }
        let file = open_here(&self.path.join(name), false).map_err(not_found_or)?;
        let meta = file.metadata().map_err(|_| OpenError::NotFound)?;
        let stat = stat_of(&meta);
        if stat.kind != Kind::File {
            return Err(OpenError::NotFound);
        }
        Ok((file, stat))
    }

    /// No version on Windows (the kept folder listings stay empty).
    pub(crate) fn version(&self) -> Option<Version> {
        None
    }

    /// Each name of the folder (UTF-8 only, and only names Windows opens as themselves) with
    /// its kind (from the folder's own listing: no call per name) and its hidden attribute,
    /// until `each` says stop (false). False if the folder cannot be read.
    pub(crate) fn for_each(&self, mut each: impl FnMut(&str, Option<Kind>, bool) -> bool) -> bool {
        let Ok(read) = std::fs::read_dir(&self.path) else {
            return false;
        };
        for item in read.flatten() {
            let Ok(name) = item.file_name().into_string() else {
                continue;
            };
            if !name_allowed(&name) {
                continue;
            }
            // On Windows both come from the listing itself.
            let (kind, hidden) = match item.metadata() {
                Ok(meta) => (Some(stat_of(&meta).kind), marked_hidden(&meta)),
                Err(_) => (None, false),
            };
            if !each(&name, kind, hidden) {
                break;
            }
        }
        true
    }
}

fn stat_of(meta: &Metadata) -> Stat {
    let t = meta.file_type();
    let kind = if t.is_symlink() {
        Kind::Link
    } else if t.is_dir() {
        Kind::Dir
    } else if t.is_file() {
        Kind::File
    } else {
        Kind::Other
    };
    Stat {
        kind,
        size: meta.len(),
        modified: meta.modified().ok(),
        version: None,
    }
}

/// Missing things and names that cannot be are "not found"; the rest is an IO error.
fn not_found_or(e: Error) -> OpenError {
    // ERROR_INVALID_NAME, ERROR_DIRECTORY, ERROR_BAD_PATHNAME, ERROR_CANT_ACCESS_FILE (a reparse
    // point the system cannot open), ERROR_NOT_A_REPARSE_POINT.
    const NAME_ERRORS: [i32; 5] = [123, 267, 161, 1920, 4390];
    match e.kind() {
        ErrorKind::NotFound | ErrorKind::NotADirectory => OpenError::NotFound,
        _ if e.raw_os_error().is_some_and(|c| NAME_ERRORS.contains(&c)) => OpenError::NotFound,
        _ => OpenError::Io(e),
    }
}

/// Device names Windows opens as devices in any folder, with any extension.
const DEVICES: [&str; 7] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$"];

pub(super) fn name_allowed(name: &str) -> bool {
    if name.is_empty()
        || name.ends_with(['.', ' '])
        || name
            .chars()
            .any(|c| c < ' ' || matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*' | '\\'))
    {
        return false;
    }
    // The part before the first dot, trailing spaces dropped, names the device.
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    let numbered = |prefix: &str| {
        upper.strip_prefix(prefix).is_some_and(|n| {
            matches!(
                n,
                "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "¹" | "²" | "³"
            )
        })
    };
    !(DEVICES.contains(&upper.as_str()) || numbered("COM") || numbered("LPT"))
}

/// The final path of `file`'s handle, as a path (long names, no `\\?\`).
fn final_path(file: &File) -> Option<PathBuf> {
    let handle = file.as_raw_handle();
    let mut buf: Vec<u16> = vec![0; 512];
    loop {
        let len = u32::try_from(buf.len()).ok()?;
        // SAFETY: `handle` is an open handle owned by `file` for this call; `buf` is a
        // writable buffer of `len` UTF-16 units, and the call writes at most that many (it
        // returns the size needed instead when it does not fit).
        let got = unsafe {
            GetFinalPathNameByHandleW(
                handle as _,
                buf.as_mut_ptr(),
                len,
                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS,
            )
        };
        let got = usize::try_from(got).ok()?;
        if got == 0 {
            return None;
        }
        if got < buf.len() {
            buf.truncate(got);
            let path = PathBuf::from(std::ffi::OsString::from_wide(&buf));
            return Some(plain_path(&path));
        }
        buf.resize(got + 1, 0);
    }
}

/// `path` below `root` (`""` for the root itself), both plain: compared component by
/// component, ignoring case (as the file system does), `/`-separated in the case `path` has.
fn rel_below(path: &Path, root: &Path) -> Option<String> {
    let root = plain_path(root);
    let mut p = path.components();
    for r in root.components() {
        let c = p.next()?;
        if !c
            .as_os_str()
            .to_string_lossy()
            .eq_ignore_ascii_case(&r.as_os_str().to_string_lossy())
        {
            return None;
        }
    }
    let rest: Vec<&str> = p
        .map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    Some(rest.join("/"))
}

pub(super) fn real_rel_of(file: &File, root: &Path) -> Option<Option<String>> {
    let real = final_path(file)?;
    let rel = rel_below(&real, root)?;
    (!rel.is_empty()).then_some(Some(rel))
}

pub(super) fn below_root(target: &str, root: &Path) -> Option<String> {
    rel_below(&plain_path(Path::new(target)), root)
}

/// `path` without the verbatim prefix: `\\?\C:\x` → `C:\x`, `\\?\UNC\srv\share\x` →
/// `\\srv\share\x`; the drive letter upper case.
pub(super) fn plain_path(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    let plain: String = if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
        format!(r"\\{rest}")
    } else if let Some(rest) = text.strip_prefix(r"\\?\") {
        rest.to_owned()
    } else {
        text.into_owned()
    };
    let mut plain = plain;
    if plain.as_bytes().get(1) == Some(&b':') && plain.as_bytes()[0].is_ascii_alphabetic() {
        plain[..1].make_ascii_uppercase();
    }
    PathBuf::from(plain)
}

/// RFC 8089: `file:///C:/dir/file`, or `file://server/share/dir/file` for a UNC path.
pub(super) fn file_uri(path: &Path) -> Option<String> {
    let plain = plain_path(path);
    let text = plain.to_str()?.replace('\\', "/");
    let text = text.trim_end_matches('/');
    match plain.components().next() {
        Some(Component::Prefix(p)) if matches!(p.kind(), Prefix::UNC(..)) => {
            Some(format!("file:{}", crate::providers::encode_path(text)))
        }
        _ => Some(format!("file:///{}", crate::providers::encode_path(text))),
    }
}

pub(super) fn normalize_uri(uri: &str) -> Cow<'_, str> {
    let Some(rest) = uri.strip_prefix("file:///") else {
        return Cow::Borrowed(uri);
    };
    let b = rest.as_bytes();
    if b.first().is_none_or(|c| !c.is_ascii_alphabetic()) {
        return Cow::Borrowed(uri);
    }
    let after = if rest[1..].starts_with(':') {
        &rest[2..]
    } else if rest
        .get(1..4)
        .is_some_and(|s| s.eq_ignore_ascii_case("%3A"))
    {
        &rest[4..]
    } else {
        return Cow::Borrowed(uri);
    };
    if !(after.is_empty() || after.starts_with('/')) {
        return Cow::Borrowed(uri);
    }
    let drive = (b[0] as char).to_ascii_uppercase();
    let normal = format!("file:///{drive}:{after}");
    if normal == uri {
        Cow::Borrowed(uri)
    } else {
        Cow::Owned(normal)
    }
}

pub(super) fn open_regular(path: &Path) -> std::io::Result<(File, u64)> {
    let (file, meta) = open_checked(path, OpenOptions::new().read(true))?;
    Ok((file, meta.len()))
}

/// Opens the regular file at `path` with `options` (its access), sharing it with every other
/// opener; an error naming what it is otherwise. A device name (`NUL`, `CON`) in its own
/// folder is refused before anything opens it.
fn open_checked(path: &Path, options: &mut OpenOptions) -> std::io::Result<(File, Metadata)> {
    if path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| !name_allowed(n))
    {
        return Err(not_regular());
    }
    // A folder does not open without FILE_FLAG_BACKUP_SEMANTICS (access denied): say what it is.
    let file = match options
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .open(path)
    {
        Ok(file) => file,
        Err(_) if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) => {
            return Err(not_regular());
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok((file, meta))
}

pub(super) fn marked_hidden(meta: &Metadata) -> bool {
    meta.file_attributes() & FILE_ATTRIBUTE_HIDDEN != 0
}

pub(super) fn same_file(file: &File, path: &Path) -> bool {
    let (Ok(copy), Ok(other)) = (file.try_clone(), same_file::Handle::from_path(path)) else {
        return false;
    };
    same_file::Handle::from_file(copy).is_ok_and(|h| h == other)
}

pub(super) fn same_path(a: &Path, b: &Path) -> bool {
    same_file::is_same_file(a, b).unwrap_or(false)
}

pub(super) fn regular_file_id(path: &Path) -> std::io::Result<super::FileId> {
    // No access rights asked: reading the file's information needs none.
    let (file, _) = open_checked(path, OpenOptions::new().access_mode(0))?;
    file_id(&file)
}

pub(super) fn file_id(file: &File) -> std::io::Result<super::FileId> {
    use windows_sys::Win32::Storage::FileSystem::{
        BY_HANDLE_FILE_INFORMATION, GetFileInformationByHandle,
    };
    // SAFETY: all-zero is a valid BY_HANDLE_FILE_INFORMATION (plain integers).
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open (owned by `file`) for this call; `info` is writable.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle() as _, &mut info) } == 0 {
        return Err(Error::last_os_error());
    }
    Ok((
        u64::from(info.dwVolumeSerialNumber),
        (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    ))
}

fn not_regular() -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        "it is not a regular file (a device or a folder)",
    )
}

pub(super) fn wake_fifo_reader(_path: &Path) {}

pub(super) fn uri_path_bytes(path: &Path) -> Cow<'_, [u8]> {
    let plain = plain_path(path);
    let mut bytes: Vec<u8> = plain
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .map(|&b| if b == b'\\' { b'/' } else { b })
        .collect();
    if bytes.get(1) == Some(&b':') {
        bytes.insert(0, b'/');
    }
    Cow::Owned(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::paths::{self, open_beneath};

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let root = super::super::canonical(dir.path()).expect("canonical");
        (dir, root)
    }

    fn found(root: &Path, rel: &str) -> Option<String> {
        open_beneath(root, rel).ok().map(|o| o.real_rel)
    }

    #[test]
    fn names_windows_would_alias_are_refused() {
        for bad in [
            "CON",
            "con",
            "Con.txt",
            "NUL",
            "nul.tar.gz",
            "AUX",
            "PRN",
            "COM1",
            "com9.log",
            "LPT1",
            "lpt3.txt",
            "COM¹",
            "CONIN$",
            "conout$",
            "CLOCK$",
            "a.txt:secret",
            "a.txt::$DATA",
            "a.",
            "a ",
            "a.txt.",
            "CON ",
            "a<b",
            "a|b",
            "a\"b",
            "a?",
            "a*",
            "a\u{1}b",
            "",
        ] {
            assert!(!name_allowed(bad), "{bad:?}");
        }
        for good in [
            "a.txt",
            "CONFIG",
            "console.log",
            "COM10",
            "LPT",
            "nul_",
            ".env",
            "a b",
        ] {
            assert!(name_allowed(good), "{good:?}");
        }
    }

    #[test]
    fn uris_follow_rfc_8089() {
        assert_eq!(
            file_uri(Path::new(r"\\?\c:\Users\me\My Docs")).as_deref(),
            Some("file:///C:/Users/me/My%20Docs")
        );
        assert_eq!(
            file_uri(Path::new(r"\\?\UNC\srv\share\d")).as_deref(),
            Some("file://srv/share/d")
        );
        assert_eq!(
            &*uri_path_bytes(Path::new(r"\\?\c:\x y\d.db")),
            b"/C:/x y/d.db"
        );
        assert_eq!(normalize_uri("file:///c:/a/b"), "file:///C:/a/b");
        assert_eq!(normalize_uri("file:///C%3A/a"), "file:///C:/a");
        assert_eq!(normalize_uri("file:///C:"), "file:///C:");
        assert_eq!(normalize_uri("file:///cx/a"), "file:///cx/a");
        assert_eq!(
            rel_below(Path::new(r"C:\Root\Sub\a.txt"), Path::new(r"c:\root")).as_deref(),
            Some("Sub/a.txt")
        );
        assert_eq!(
            rel_below(Path::new(r"C:\Rooted\a"), Path::new(r"C:\Root")),
            None
        );
    }

    /// Devices, streams and names with trailing dots or spaces are not found, never opened;
    /// the file itself by another case is found as what it is.
    #[test]
    fn devices_streams_and_aliases_are_not_found() {
        let (_dir, root) = root();
        std::fs::write(root.join("a.txt"), "a").expect("write");
        for bad in [
            "CON",
            "nul",
            "nul.txt",
            "COM1",
            "aux.md",
            "a.txt:secret",
            "a.txt::$DATA",
            "a.txt.",
            "a.txt ",
            "A.TXT.",
        ] {
            assert!(found(&root, bad).is_none(), "{bad:?}");
            assert!(!paths::is_plain_relative(bad), "{bad:?}");
        }
        assert_eq!(found(&root, "A.TXT").as_deref(), Some("a.txt"));
        assert!(paths::read_regular(Path::new("NUL"), 10).is_err());
    }

    /// A short (8.3) name opens the file under its long name, which is what visibility judges:
    /// `SECRET~1.TXT` for `.secret-file.txt` is that hidden file.
    #[test]
    fn short_names_are_judged_by_their_long_name() {
        let (_dir, root) = root();
        std::fs::create_dir(root.join(".hidden-folder")).expect("mkdir");
        std::fs::write(root.join(".hidden-folder/inside.txt"), "x").expect("write");
        std::fs::write(root.join(".secret-file.txt"), "s").expect("write");
        for long in [".secret-file.txt", ".hidden-folder/inside.txt"] {
            let Some(short) = short_rel(&root, long) else {
                eprintln!("no short name for {long} (8.3 names off): not shown here");
                continue;
            };
            assert_eq!(found(&root, &short).as_deref(), Some(long), "{short}");
            let vis = crate::providers::visible::Visibility::new(&root, false, false);
            let opened = open_beneath(&root, &short).expect("opened");
            assert!(!vis.shows(&short, &opened.real_rel), "{short} shows {long}");
        }
    }

    /// `rel`'s short form below `root`, if it differs.
    fn short_rel(root: &Path, rel: &str) -> Option<String> {
        use std::os::windows::ffi::OsStrExt as _;
        let wide: Vec<u16> = root
            .join(rel)
            .as_os_str()
            .encode_wide()
            .chain([0])
            .collect();
        let mut buf = vec![0u16; 1024];
        // SAFETY: `wide` is NUL-terminated; `buf` holds `buf.len()` writable units.
        let n = unsafe {
            windows_sys::Win32::Storage::FileSystem::GetShortPathNameW(
                wide.as_ptr(),
                buf.as_mut_ptr(),
                u32::try_from(buf.len()).ok()?,
            )
        };
        let short = String::from_utf16(&buf[..usize::try_from(n).ok()?]).ok()?;
        let short = rel_below(Path::new(&short), root)?;
        (short != rel).then_some(short)
    }

    /// The hidden attribute hides a file as a dot does; `hidden = true` shows it.
    #[test]
    // `attrib` and `cmd /c mklink`: Windows' own programs make what the tests need.
    #[allow(clippy::disallowed_methods)]
    fn the_hidden_attribute_counts_as_hidden() {
        let (_dir, root) = root();
        std::fs::write(root.join("plain.txt"), "p").expect("write");
        std::fs::write(root.join("marked.txt"), "m").expect("write");
        let attrib = std::process::Command::new("attrib")
            .arg("+h")
            .arg(root.join("marked.txt"))
            .status();
        let meta = std::fs::symlink_metadata(root.join("marked.txt")).expect("meta");
        if !attrib.is_ok_and(|s| s.success()) || !marked_hidden(&meta) {
            eprintln!("attrib +h did not mark the file: not shown here");
            return;
        }
        let dir = Dir::open(&root).expect("root");
        let mut seen = Vec::new();
        dir.for_each(|name, _, hidden| {
            seen.push((name.to_owned(), hidden));
            true
        });
        seen.sort();
        assert_eq!(
            seen,
            [("marked.txt".into(), true), ("plain.txt".into(), false)]
        );
        let vis = crate::providers::visible::Visibility::new(&root, false, false);
        assert!(vis.visible("plain.txt") && !vis.visible("marked.txt"));
        let shown = crate::providers::visible::Visibility::new(&root, true, false);
        assert!(shown.visible("marked.txt"));
    }

    /// Symlinks and junctions that leave the root are not found; one inside is read at its
    /// target. (Wine 8 creates no Windows links: there the links are not made, and it says so.)
    #[test]
    #[allow(clippy::disallowed_methods)]
    fn links_and_junctions_leaving_the_root_are_not_found() {
        let (_dir, root) = root();
        let (_out, outside) = self::root();
        std::fs::write(outside.join("secret.txt"), "s").expect("write");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/in.txt"), "i").expect("write");
        let made = |link: &str| std::fs::symlink_metadata(root.join(link)).is_ok();
        let _ =
            std::os::windows::fs::symlink_file(outside.join("secret.txt"), root.join("out.txt"));
        let _ = std::os::windows::fs::symlink_dir(&outside, root.join("outdir"));
        let _ = std::os::windows::fs::symlink_file(r"sub\in.txt", root.join("in-link.txt"));
        let _ = std::process::Command::new("cmd")
            .args(["/c", "mklink", "/J"])
            .arg(root.join("junction"))
            .arg(&outside)
            .output();
        for (link, rel) in [
            ("out.txt", "out.txt"),
            ("outdir", "outdir/secret.txt"),
            ("junction", "junction/secret.txt"),
        ] {
            if made(link) {
                assert!(found(&root, rel).is_none(), "{rel}");
            } else {
                eprintln!("{link} was not made here (Wine): not shown");
            }
        }
        if made("in-link.txt") {
            assert_eq!(found(&root, "in-link.txt").as_deref(), Some("sub/in.txt"));
        }
    }
}
