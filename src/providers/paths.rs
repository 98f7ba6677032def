//! Paths and files as every file-serving source needs them: the one check that a relative path
//! from a URI is plain, the one race-free open below a root, the one capped read, and MIME types.
//! The platform's own calls are `platform`'s (one seam); this module is the same everywhere.
//!
//! # Opening below a root, race-free
//!
//! A check on a path followed by an open of that path is a race: between the two, a file can be
//! swapped for a symlink to `/etc/passwd`, or a folder for a symlink to `/`. `open_beneath` never
//! checks a path and then opens it again: it walks from the root's open folder (`platform::Dir`),
//! one component at a time without following links, resolving each link itself (relative
//! targets from where it stands, absolute targets only when they point under the root), and
//! refusing any step that would leave the root. What it returns is the file it opened, checked
//! on its handle to be a regular file, and the real path below the root that file was reached
//! by (for the visibility rules; on Windows the handle's own final path, long names).
//!
//! Files are opened non-blocking (a FIFO swapped in never hangs a thread) and read up to a cap
//! that is enforced on the bytes read, not on an earlier `stat` (a file can grow in between).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::platform::{self, name_allowed};
pub(crate) use super::platform::{Dir, Kind, OpenError, Version};

/// How many symlinks one open may follow (Linux's own limit).
const MAX_LINKS: usize = 40;

/// A relative path from a URI (still percent-encoded): decoded and checked to be plain — no
/// encoded `/` or `\` (one segment must stay one segment), no NUL, no `\`, not absolute, no
/// empty, `.` or `..` segment, and every segment a name the platform opens as itself (Windows:
/// no device name, stream or trailing dot). `None` for anything else ("not found").
pub(crate) fn plain_relative(encoded: &str) -> Option<String> {
    let lower = encoded.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") || lower.contains("%00") {
        return None;
    }
    let rel = crate::uri::percent_decode(encoded)?;
    is_plain_relative(&rel).then_some(rel)
}

/// Whether an already decoded relative path is plain (see `plain_relative`).
pub(crate) fn is_plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.contains('\0')
        && !rel.contains('\\')
        && !rel.starts_with('/')
        && rel
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != ".." && name_allowed(s))
}

/// A regular file opened below a root.
#[derive(Debug)]
pub(crate) struct Opened {
    pub file: File,
    /// Its path below the root with every symlink resolved (`/`-separated).
    pub real_rel: String,
    /// Its size when it was opened (it may change: reads are capped separately).
    pub size: u64,
    /// Its version when it was opened (`None` where not asked, or on Windows).
    pub version: Option<Version>,
}

/// Opens `rel` (a plain relative path) below the folder `root` (a canonical path), following
/// symlinks only while they stay below it, and only if it is a regular file. See the module doc.
pub(crate) fn open_beneath(root: &Path, rel: &str) -> Result<Opened, OpenError> {
    open_beneath_in(&open_root(root)?, root, rel)
}

/// Opens the folder `root` (a canonical path) for `open_beneath_in`.
pub(crate) fn open_root(root: &Path) -> Result<Dir, OpenError> {
    Dir::open(root)
}

/// `open_beneath` from `root_dir`, the folder `root` opened (`open_root`) beforehand: a caller
/// that keeps it open saves two system calls per file.
pub(crate) fn open_beneath_in(root_dir: &Dir, root: &Path, rel: &str) -> Result<Opened, OpenError> {
    let mut todo: VecDeque<String> = rel.split('/').map(str::to_owned).collect();
    // The folders walked so far below the root and their names.
    let mut dirs: Vec<Dir> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        if part.is_empty() || part == "." {
            continue;
        }
        if part == ".." {
            // Only symlink targets get here (`rel` is plain): `..` above the root is out.
            if names.pop().is_none() {
                return Err(OpenError::NotFound);
            }
            dirs.pop();
            continue;
        }
        if !name_allowed(&part) {
            return Err(OpenError::NotFound);
        }
        let here = dirs.last().unwrap_or(root_dir);
        // Look before opening, so a FIFO or a device is never even opened; the file is checked
        // again on its handle after the open (it may have been swapped in between).
        let stat = here.stat(&part)?;
        let last = todo.iter().all(|p| p.is_empty() || p == ".");
        match stat.kind {
            Kind::Link => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(OpenError::NotFound);
                }
                let target = here.read_link(&part)?;
                let rest: Vec<String> = if platform::is_absolute_target(&target) {
                    // An absolute target counts only if it points under the root.
                    let below = platform::below_root(&target, root).ok_or(OpenError::NotFound)?;
                    dirs.clear();
                    names.clear();
                    below.split('/').map(str::to_owned).collect()
                } else {
                    platform::link_segments(&target)
                };
                for p in rest.into_iter().rev() {
                    todo.push_front(p);
                }
            }
            Kind::Dir if !last => {
                dirs.push(here.open_dir(&part)?);
                names.push(part);
            }
            Kind::File if last => {
                let (file, stat) = here.open_file(&part)?;
                names.push(part);
                // Where the platform must ask the handle (Windows), its own final path.
                let real_rel = match platform::real_rel_of(&file, root) {
                    Some(Some(real)) => real,
                    Some(None) => names.join("/"),
                    None => return Err(OpenError::NotFound),
                };
                return Ok(Opened {
                    file,
                    real_rel,
                    size: stat.size,
                    version: stat.version,
                });
            }
            _ => return Err(OpenError::NotFound),
        }
    }
    Err(OpenError::NotFound)
}

/// Opens the folder `rel_dir` (a plain relative path) below `root` for `open_in`, following no
/// symlink at all (`NotFound` for one: the caller falls back to `open_beneath`). A search opens
/// many files of one folder: this walk is made once per folder instead of once per file.
pub(crate) fn open_dir_beneath(root: &Path, rel_dir: &str) -> Result<Dir, OpenError> {
    let mut dir = Dir::open(root)?;
    for part in rel_dir.split('/').filter(|p| !p.is_empty()) {
        if part == "." || part == ".." || part.contains('\0') {
            return Err(OpenError::NotFound);
        }
        dir = dir.open_dir(part)?;
    }
    Ok(dir)
}

/// Opens the regular file `name` (one path segment) in the folder `dir` (from
/// `open_dir_beneath`), never following a symlink, with `open_beneath`'s checks. On Windows the
/// handle's final path must be `rel` (below `root`) itself, else `NotFound` (the caller falls
/// back to `open_beneath`, which judges the real path).
pub(crate) fn open_in(
    dir: &Dir,
    root: &Path,
    rel: &str,
    name: &str,
) -> Result<(File, u64), OpenError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(OpenError::NotFound);
    }
    let (file, stat) = dir.open_file(name)?;
    match platform::real_rel_of(&file, root) {
        Some(None) => {}
        Some(Some(real)) if real == rel => {}
        _ => return Err(OpenError::NotFound),
    }
    Ok((file, stat.size))
}

/// A read that stopped at its cap.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// More than `cap` bytes: at least this many were there.
    TooLarge(u64),
    Io(std::io::Error),
}

/// Files up to this size are read with one `read` (see `read_capped`).
const SMALL_READ: usize = 64 * 1024;

/// Reads `file` to its end, but never more than `cap` bytes (`TooLarge` past it). `hint` sizes
/// the buffer (the size `fstat` gave).
pub(crate) fn read_capped(file: &mut File, cap: u64, hint: u64) -> Result<Vec<u8>, ReadError> {
    if hint > cap {
        return Err(ReadError::TooLarge(hint));
    }
    let want = usize::try_from(hint.min(cap)).unwrap_or(0) + 1;
    let mut out = Vec::with_capacity(want);
    if want <= SMALL_READ {
        // One `read` for a small file: asked for one byte more than it holds, a regular file
        // gives fewer only at its end, so no second `read` is needed to see the end.
        out.resize(want, 0);
        match file.read(&mut out) {
            Ok(n) if n < want => {
                out.truncate(n);
                return Ok(out);
            }
            Ok(n) => out.truncate(n),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                ) =>
            {
                out.clear()
            }
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
    let limit = cap.saturating_add(1);
    loop {
        match file
            .by_ref()
            .take(limit - out.len() as u64)
            .read_to_end(&mut out)
        {
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(ReadError::Io(e)),
        }
    }
    if out.len() as u64 > cap {
        return Err(ReadError::TooLarge(out.len() as u64));
    }
    Ok(out)
}

/// Opens a file given by its own path (a manifest, a single-file source) only if it is a regular
/// file, without blocking on a FIFO, and reads at most `cap` bytes of it.
pub(crate) fn read_regular(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let (mut file, size) = platform::open_regular(path).map_err(ReadError::Io)?;
    read_capped(&mut file, cap, size)
}

/// MIME type from the extension; for unknown extensions, text/plain when `is_text()` says so.
pub(crate) fn mime_for(path: &Path, is_text: impl FnOnce() -> bool) -> String {
    mime_static(path.extension().and_then(|e| e.to_str()), is_text).to_owned()
}

/// `mime_for` by the extension itself (`Path::extension`'s), without an allocation.
pub(crate) fn mime_static(ext: Option<&str>, is_text: impl FnOnce() -> bool) -> &'static str {
    if let Some(m) = mime_of_ext(ext) {
        m
    } else if is_text() {
        "text/plain"
    } else {
        "application/octet-stream"
    }
}

/// The MIME type an extension names, if it names one (no sniffing).
pub(crate) fn mime_of_ext(ext: Option<&str>) -> Option<&'static str> {
    let ext = ext?;
    // mime_guess maps a few source-code extensions to media types (`.ts` is MPEG transport
    // stream); these are the ones a code assistant meets every day.
    const FIXED: [(&str, &str); 11] = [
        ("ts", "text/x-typescript"),
        ("mts", "text/x-typescript"),
        ("cts", "text/x-typescript"),
        ("tsx", "text/x-tsx"),
        ("rs", "text/x-rust"),
        ("md", "text/markdown"),
        ("markdown", "text/markdown"),
        ("toml", "application/toml"),
        ("lock", "text/plain"),
        // What mime_guess says, without its table search, for the most common names.
        ("txt", "text/plain"),
        ("json", "application/json"),
    ];
    let fixed = FIXED
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map(|(_, m)| *m);
    fixed.or_else(|| mime_guess::from_ext(ext).first_raw())
}

/// Whether the first 8 KiB of `bytes` are UTF-8 without NUL (a cut multi-byte character at the
/// end of a full buffer is fine).
pub(crate) fn looks_like_text(bytes: &[u8], full: bool) -> bool {
    if bytes.contains(&0) {
        return false;
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && full,
    }
}

/// Whether the first 8 KiB of the file at `path` are text (see `looks_like_text`). Opened
/// non-blocking and only if regular.
pub(crate) fn sniff_is_text(path: &Path) -> bool {
    platform::open_regular(path).is_ok_and(|(file, _)| sniff(file))
}

/// `sniff_is_text` of the file `name` in the folder `dir` (a bare name: no walk from the root).
pub(crate) fn sniff_is_text_at(dir: &Dir, name: &str) -> bool {
    dir.open_file(name).is_ok_and(|(file, _)| sniff(file))
}

fn sniff(mut file: File) -> bool {
    let mut buf = [0u8; 8192];
    let Ok(n) = file.read(&mut buf) else {
        return false;
    };
    looks_like_text(&buf[..n], n == buf.len())
}

/// A short reason for an IO error, for messages.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// The canonical form of `path` if it can be resolved (`platform::canonical`), else the path
/// itself.
pub(crate) fn canonical_or_same(path: &Path) -> PathBuf {
    platform::canonical(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::symlink;
    #[cfg(windows)]
    fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> std::io::Result<()> {
        let (target, link) = (target.as_ref(), link.as_ref());
        let dir = link
            .parent()
            .map_or(target.to_path_buf(), |p| p.join(target));
        if dir.is_dir() {
            std::os::windows::fs::symlink_dir(target, link)
        } else {
            std::os::windows::fs::symlink_file(target, link)
        }
    }

    /// A version is settled once both its times are `age` old; a change time after the
    /// modification time counts (a write that set the modification time back).
    #[test]
    fn a_version_settles_when_both_times_are_old_enough() {
        use std::time::{Duration, UNIX_EPOCH};
        let v = |m: i64, c: i64| Version {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (m, 500),
            ctime: (c, 500),
        };
        let at = |secs: u64, nanos: u32| UNIX_EPOCH + Duration::new(secs, nanos);
        let age = Duration::from_secs(1);
        assert!(v(100, 100).settled(at(101, 500), age));
        assert!(!v(100, 100).settled(at(101, 499), age));
        assert!(!v(10, 100).settled(at(100, 900), age));
        assert!(!v(100, 100).settled(at(0, 0), age));
    }

    #[test]
    fn plain_relative_paths_only() {
        assert_eq!(plain_relative("a/b%20c.md").as_deref(), Some("a/b c.md"));
        for bad in [
            "", "a%2Fb", "a%2fb", "a%5Cb", "a%00", "../x", "a/../x", "./a", "a//b", "/etc", "a\\b",
            "bad%zz",
        ] {
            assert_eq!(plain_relative(bad), None, "{bad:?}");
        }
    }

    fn read(root: &Path, rel: &str) -> Option<(String, String)> {
        let mut o = open_beneath(root, rel).ok()?;
        let bytes = read_capped(&mut o.file, 1024, o.size).ok()?;
        Some((o.real_rel, String::from_utf8(bytes).ok()?))
    }

    /// (Windows, junctions too: `platform::windows::tests::links_and_junctions_leaving_the_root_are_not_found`.)
    #[test]
    fn opens_below_the_root_and_follows_only_inner_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::providers::platform::canonical(&dir.path().join("root")).ok();
        assert!(root.is_none());
        std::fs::create_dir_all(dir.path().join("root/a/b")).unwrap();
        let root = crate::providers::platform::canonical(&dir.path().join("root")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "inner").unwrap();
        std::fs::write(dir.path().join("secret"), "outer").unwrap();
        let inner = Some(("a/b/f.txt".to_owned(), "inner".to_owned()));
        assert_eq!(read(&root, "a/b/f.txt"), inner);
        // Wine 8 makes a link a Unix symlink whose target reads back as a `Z:\…` path (the
        // same file by another name, which a Windows link never is): not shown there.
        if std::env::var_os("MCP_MANIFEST_TEST_WINE").is_some() {
            return;
        }
        match symlink("b/f.txt", root.join("a/rel-link")) {
            Ok(()) => {}
            // Windows makes symlinks only with a privilege (or developer mode); Wine 8 none.
            Err(e) if cfg!(windows) => {
                eprintln!("no symlink made here ({e}): only the plain reads shown");
                return;
            }
            Err(e) => panic!("symlink: {e}"),
        }
        symlink(root.join("a/b/f.txt"), root.join("abs-in")).unwrap();
        symlink(dir.path().join("secret"), root.join("abs-out")).unwrap();
        symlink("../secret", root.join("rel-out")).unwrap();
        symlink("../../../secret", root.join("a/b/deep-out")).unwrap();
        symlink("b", root.join("a/dirlink")).unwrap();
        symlink(dir.path(), root.join("outdir")).unwrap();
        symlink("loop", root.join("loop")).unwrap();
        assert_eq!(read(&root, "a/rel-link"), inner);
        assert_eq!(read(&root, "abs-in"), inner);
        assert_eq!(read(&root, "a/dirlink/f.txt"), inner);
        for bad in [
            "abs-out",
            "rel-out",
            "a/b/deep-out",
            "outdir/secret",
            "loop",
            "a",
            "a/b",
            "missing",
        ] {
            assert!(read(&root, bad).is_none(), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    // `mkfifo(1)`: the same on Linux and macOS, no `unsafe` for `mkfifo(3)`.
    #[allow(clippy::disallowed_methods)]
    fn fifos_are_not_found_and_never_block() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::providers::platform::canonical(dir.path()).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(
            open_beneath(&root, "pipe"),
            Err(OpenError::NotFound)
        ));
        assert!(read_regular(&root.join("pipe"), 10).is_err());
    }

    #[test]
    fn common_names_get_what_mime_guess_gives() {
        for ext in ["txt", "json", "TXT", "html", "png", "py"] {
            let name = format!("f.{ext}");
            assert_eq!(
                mime_for(Path::new(&name), || false),
                mime_guess::from_ext(ext).first_raw().unwrap(),
                "{name}"
            );
        }
        assert_eq!(mime_for(Path::new("a.rs"), || false), "text/x-rust");
        assert_eq!(mime_for(Path::new("noext"), || true), "text/plain");
        assert_eq!(
            mime_for(Path::new("noext"), || false),
            "application/octet-stream"
        );
    }

    #[test]
    fn the_cap_is_on_the_bytes_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::providers::platform::canonical(dir.path()).unwrap();
        std::fs::write(root.join("f"), vec![b'x'; 100]).unwrap();
        let mut o = open_beneath(&root, "f").unwrap();
        // A stale size from before the file grew does not let more than the cap through.
        assert!(matches!(
            read_capped(&mut o.file, 50, 10),
            Err(ReadError::TooLarge(51))
        ));
        let mut o = open_beneath(&root, "f").unwrap();
        assert_eq!(read_capped(&mut o.file, 100, o.size).unwrap().len(), 100);
        assert!(matches!(
            read_capped(&mut o.file, 50, 100),
            Err(ReadError::TooLarge(100))
        ));
        // A stale size from before the file grew or shrank: the bytes it holds now.
        for stale in [0, 10, 99, 101, 500] {
            let mut o = open_beneath(&root, "f").unwrap();
            assert_eq!(
                read_capped(&mut o.file, 1000, stale).unwrap(),
                vec![b'x'; 100]
            );
        }
        // Larger than one `read` at once.
        let big: Vec<u8> = (0..SMALL_READ * 3).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join("big"), &big).unwrap();
        let mut o = open_beneath(&root, "big").unwrap();
        assert_eq!(read_capped(&mut o.file, 1 << 20, 100).unwrap(), big);
    }
}
