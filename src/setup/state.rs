//! Setup's own state, kept outside every project (platform::Dirs::state): the backups of
//! project files (a backup inside a repository would be committed with it), and the list of
//! files and folders `register` created, so that `unregister` removes exactly those once they
//! hold nothing again, and never a file the user made.

use std::path::{Path, PathBuf};

use super::write;

/// The state folder (`…/mcp-manifest`).
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub dir: PathBuf,
}

const CREATED: &str = "created.json";

impl State {
    /// Where backups of the file `target` go: `backups/` plus the file's folder spelled as one
    /// name (`/home/u/proj` → `_home_u_proj`), so backups of two projects never mix.
    pub(crate) fn backups_for(&self, target: &Path) -> PathBuf {
        let folder = target.parent().unwrap_or(Path::new(""));
        let name: String = folder
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir.join("backups").join(name)
    }

    fn list_path(&self) -> PathBuf {
        self.dir.join(CREATED)
    }

    /// Edits the list under its lock.
    fn edit(&self, change: impl FnOnce(&mut Vec<String>)) -> Result<(), String> {
        let path = self.list_path();
        let locked = write::lock(&path, true)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .ok_or_else(|| format!("{}: cannot create the file", path.display()))?;
        let mut list: Vec<String> = serde_json::from_slice(&locked.bytes).unwrap_or_default();
        let before = list.clone();
        change(&mut list);
        if list == before && !locked.bytes.is_empty() {
            return Ok(());
        }
        let text = serde_json::to_string_pretty(&list).unwrap_or_else(|_| "[]".into());
        locked.commit(text.as_bytes(), true, None).map(|_| ())
    }

    /// Records that this program created `paths` (a file and the folders made for it).
    pub(crate) fn remember(&self, paths: &[PathBuf]) -> Result<(), String> {
        self.edit(|list| {
            for p in paths {
                let p = p.to_string_lossy().into_owned();
                if !list.contains(&p) {
                    list.push(p);
                }
            }
        })
    }

    /// Whether this program created `path`.
    pub(crate) fn created(&self, path: &Path) -> bool {
        let list: Vec<String> = std::fs::read(self.list_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let p = path.to_string_lossy();
        list.iter().any(|x| *x == p)
    }

    /// The folders this program created that hold `file`, outermost first.
    pub(crate) fn created_folders(&self, file: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = file
            .ancestors()
            .skip(1)
            .filter(|a| !a.as_os_str().is_empty() && self.created(a))
            .map(Path::to_path_buf)
            .collect();
        out.reverse();
        out
    }

    /// Drops `paths` from the list (they were removed).
    pub(crate) fn forget(&self, paths: &[PathBuf]) -> Result<(), String> {
        self.edit(|list| {
            list.retain(|x| !paths.iter().any(|p| *x == p.to_string_lossy()));
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_forgets_created_paths() {
        let dir = tempfile::tempdir().unwrap();
        let s = State {
            dir: dir.path().join("state"),
        };
        let file = Path::new("/p/.vscode/mcp.json");
        s.remember(&[PathBuf::from("/p/.vscode"), file.to_path_buf()])
            .unwrap();
        assert!(s.created(file));
        assert_eq!(s.created_folders(file), [PathBuf::from("/p/.vscode")]);
        s.forget(&[file.to_path_buf()]).unwrap();
        assert!(!s.created(file));
        assert!(s.created(Path::new("/p/.vscode")));
        assert_eq!(
            s.backups_for(file),
            dir.path().join("state/backups/_p_.vscode")
        );
    }
}
