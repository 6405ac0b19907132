//! The program side's settings file: `settings.toml` under `XCC_HOME` (default `~/.xcc`), a flat
//! table of string values. Certificate pins live under `tls.pin.<host>:<port>`.
//!
//! The file is read again before each write and replaced atomically (a temporary file renamed
//! over it), so programs that run at once do not lose each other's keys.
//!
//! A crate of its own so that its parser, which reads a file anyone may have edited, can be
//! fuzzed without building a GPU stack (`fuzz/fuzz_targets/settings.rs`). It owns the file's
//! format only: what the keys mean belongs to the runtime, which must reach the file through here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name under `XCC_HOME`.
pub const SETTINGS_FILE: &str = "settings.toml";

/// Why the settings could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// The file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file read or written.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The file is not a flat TOML table of strings.
    #[error("{path} is not a settings file ({error}): fix the line it names, or remove the file to start afresh")]
    Parse {
        /// The file read or written.
        path: PathBuf,
        /// The parser's complaint.
        error: String,
    },
}

/// The settings file of one `XCC_HOME`.
#[derive(Debug, Clone)]
pub struct Home {
    dir: PathBuf,
}

/// The user's own folder: `%USERPROFILE%` on Windows (a `HOME` there may be a Unix-style path
/// set by a shell such as Git Bash), `$HOME` elsewhere; empty (the current folder) when unset.
pub fn user_home() -> PathBuf {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    std::env::var_os(var).map(PathBuf::from).unwrap_or_default()
}

impl Home {
    /// The settings under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Home {
        Home { dir: dir.into() }
    }

    /// `XCC_HOME`, else `~/.xcc` (`%USERPROFILE%\.xcc` on Windows).
    pub fn from_env(xcc_home: Option<String>) -> Home {
        if let Some(dir) = xcc_home.filter(|d| !d.is_empty()) {
            return Home::new(dir);
        }
        Home::new(user_home().join(".xcc"))
    }

    /// The settings file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(SETTINGS_FILE)
    }

    /// Every key and value; empty when there is no file yet.
    pub fn read(&self) -> Result<BTreeMap<String, String>, HomeError> {
        let path = self.path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(error) => return Err(HomeError::Io { path, error }),
        };
        parse(&text).map_err(|error| HomeError::Parse { path, error })
    }

    /// One value.
    pub fn get(&self, key: &str) -> Result<Option<String>, HomeError> {
        Ok(self.read()?.remove(key))
    }

    /// Sets one value (None removes it), keeping every other key.
    pub fn set(&self, key: &str, value: Option<&str>) -> Result<(), HomeError> {
        let mut values = self.read()?;
        match value {
            Some(v) => values.insert(key.to_owned(), v.to_owned()),
            None => values.remove(key),
        };
        let path = self.path();
        let io = |error| HomeError::Io { path: path.clone(), error };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let text = render(&values).map_err(|error| HomeError::Parse { path: path.clone(), error })?;
        let temp = self.dir.join(format!(".{SETTINGS_FILE}.{}", std::process::id()));
        std::fs::write(&temp, format!("# xcd program settings: certificate pins and placements\n{text}"))
            .map_err(io)?;
        std::fs::rename(&temp, &path).map_err(io)
    }
}

/// Reads a flat table of string values.
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    table
        .into_iter()
        .map(|(k, v)| match v {
            toml::Value::String(s) => Ok((k, s)),
            other => Err(format!("key {k:?} holds {}, not a string", other.type_str())),
        })
        .collect()
}

/// Writes a flat table of string values as [`parse`] reads it (without the file's comment).
pub fn render(values: &BTreeMap<String, String>) -> Result<String, String> {
    toml::to_string(values).map_err(|e| e.to_string())
}

/// Where `dir`'s settings file is, for messages.
pub fn describe(dir: &Path) -> String {
    dir.join(SETTINGS_FILE).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_a_round_trip_and_removal() {
        let dir = std::env::temp_dir().join(format!("xcc-home-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let home = Home::new(&dir);
        assert_eq!(home.get("tls.pin.gpu-box:7227").expect("no file yet"), None);
        home.set("tls.pin.gpu-box:7227", Some("ab12")).expect("written");
        home.set("tls.pin.other:1", Some("cd34")).expect("written");
        assert_eq!(home.get("tls.pin.gpu-box:7227").expect("read").as_deref(), Some("ab12"));
        home.set("tls.pin.gpu-box:7227", None).expect("removed");
        let all = home.read().expect("read");
        assert_eq!(all.len(), 1);
        assert!(std::fs::read_to_string(home.path()).expect("file").contains("\"tls.pin.other:1\" = \"cd34\""));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_broken_file_says_how_to_recover() {
        assert!(parse("a = 1").is_err());
        assert!(parse("= =").is_err());
        assert_eq!(parse("").expect("empty").len(), 0);
    }
}
