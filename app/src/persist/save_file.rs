//! The native save file: a RON map of keys to strings (the format eframe's
//! own storage uses, so older saves still read), written so that nothing is
//! ever lost:
//! - a file that cannot be read is never written over: it is moved aside
//!   when it can be, and otherwise left alone while this session saves into
//!   a file beside it;
//! - every write goes to a temporary file, is read back and compared, and
//!   only then renamed over the save (a short or failed write leaves the old
//!   save as it was);
//! - every failure is reported once, with what it means for the learner.
//!
//! All file access goes through [`Disk`], so the tests can make reads and
//! writes fail the ways a real disk does (permission denied, a read-only
//! folder, a short write) even when they run as root.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::notice::Notice;

/// The file operations the save file needs.
pub trait Disk: Send {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates or truncates `path` and writes `bytes`.
    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
}

/// The real file system.
pub struct RealDisk;

impl Disk for RealDisk {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, bytes)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
}

/// A save file: read once when the app starts, written on every flush.
pub struct SaveFile {
    disk: Box<dyn Disk>,
    /// Where saves go: the save file, or beside it when the save file must
    /// not be touched.
    target: PathBuf,
    entries: BTreeMap<String, String>,
    /// The last write's failure, reported once.
    failure: Option<Notice>,
    reported: Option<Notice>,
}

/// What opening the save file found, to tell the learner (once).
pub struct Opened {
    pub file: SaveFile,
    pub notice: Option<Notice>,
}

impl SaveFile {
    /// Reads `path` (`now_secs` names any file moved aside).
    pub fn open(disk: Box<dyn Disk>, path: &Path, now_secs: u64) -> Opened {
        let beside = |suffix: &str| {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{suffix}-{now_secs}"));
            PathBuf::from(name)
        };
        let file = |disk, target: &Path, entries| SaveFile {
            disk,
            target: target.to_owned(),
            entries,
            failure: None,
            reported: None,
        };
        let bytes = match disk.read(path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Opened {
                    file: file(disk, path, BTreeMap::new()),
                    notice: None,
                };
            }
            Err(err) => {
                // It may hold real progress: leave it, and save beside it.
                let session = beside("session");
                let notice = Notice::FileUnreadable {
                    path: path.display().to_string(),
                    error: err.to_string(),
                    session: session.display().to_string(),
                };
                return Opened {
                    file: file(disk, &session, BTreeMap::new()),
                    notice: Some(notice),
                };
            }
        };
        let parsed = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| ron::from_str::<BTreeMap<String, String>>(text).ok());
        if let Some(entries) = parsed {
            return Opened {
                file: file(disk, path, entries),
                notice: None,
            };
        }
        let aside = beside("unreadable");
        match disk.rename(path, &aside) {
            Ok(()) => Opened {
                file: file(disk, path, BTreeMap::new()),
                notice: Some(Notice::FileMovedAside {
                    aside: aside.display().to_string(),
                }),
            },
            Err(err) => {
                let session = beside("session");
                let notice = Notice::FileStuck {
                    path: path.display().to_string(),
                    error: err.to_string(),
                    session: session.display().to_string(),
                };
                Opened {
                    file: file(disk, &session, BTreeMap::new()),
                    notice: Some(notice),
                }
            }
        }
    }

    /// Where this session's saves go.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Writes every entry: to a temporary file, read back and compared, then
    /// renamed over the target. On failure the target is as it was.
    fn write(&mut self) -> io::Result<()> {
        let text = ron::ser::to_string_pretty(&self.entries, ron::ser::PrettyConfig::default())
            .map_err(io::Error::other)?;
        let mut temporary = self.target.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let written = self.disk.write(&temporary, text.as_bytes()).and_then(|()| {
            let back = self.disk.read(&temporary)?;
            if back == text.as_bytes() {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!(
                        "only {} of {} bytes reached the disk",
                        back.len(),
                        text.len()
                    ),
                ))
            }
        });
        let renamed = written.and_then(|()| self.disk.rename(&temporary, &self.target));
        if renamed.is_err() {
            let _ = self.disk.remove(&temporary);
        }
        renamed
    }

    /// A failure the learner has not been told about yet.
    pub fn take_failure(&mut self) -> Option<Notice> {
        let failure = self.failure.clone()?;
        if self.reported.as_ref() == Some(&failure) {
            return None;
        }
        self.reported = Some(failure.clone());
        Some(failure)
    }
}

impl super::Store for SaveFile {
    fn get_string(&self, key: &str) -> Option<String> {
        self.entries.get(key).cloned()
    }

    fn set_string(&mut self, key: &str, value: String) {
        self.entries.insert(key.to_owned(), value);
    }

    fn flush(&mut self) {
        match self.write() {
            Ok(()) => self.failure = None,
            Err(err) => {
                let notice = Notice::SaveFailed {
                    path: self.target.display().to_string(),
                    error: err.to_string(),
                };
                log::error!("{notice}");
                eprintln!("dlsys-lab: {notice}");
                self.failure = Some(notice);
            }
        }
    }

    fn take_failure(&mut self) -> Option<Notice> {
        SaveFile::take_failure(self)
    }
}

#[cfg(test)]
pub mod fake {
    //! A disk whose files live in memory and whose reads and writes fail on
    //! request, the way real ones do.

    use std::collections::HashMap;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    /// What goes wrong.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Faults {
        /// Reading the save file is refused (mode 0222).
        pub unreadable_file: bool,
        /// Writing or renaming onto the save file is refused (a read-only file).
        pub read_only_file: bool,
        /// Nothing can be created or renamed in the folder.
        pub read_only_folder: bool,
        /// Writes stop halfway and say nothing.
        pub short_writes: bool,
    }

    #[derive(Clone, Default)]
    pub struct FakeDisk {
        pub files: Arc<Mutex<HashMap<PathBuf, Vec<u8>>>>,
        pub faults: Arc<Mutex<Faults>>,
        pub save_file: PathBuf,
    }

    fn denied() -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "Permission denied (os error 13)",
        )
    }

    impl FakeDisk {
        pub fn new(save_file: &Path, contents: Option<&[u8]>, faults: Faults) -> Self {
            let disk = Self {
                save_file: save_file.to_owned(),
                faults: Arc::new(Mutex::new(faults)),
                ..Self::default()
            };
            if let (Some(bytes), Ok(mut files)) = (contents, disk.files.lock()) {
                files.insert(save_file.to_owned(), bytes.to_vec());
            }
            disk
        }

        pub fn file(&self, path: &Path) -> Option<Vec<u8>> {
            self.files.lock().ok()?.get(path).cloned()
        }

        fn faults(&self) -> Faults {
            self.faults.lock().map(|f| *f).unwrap_or_default()
        }
    }

    impl super::Disk for FakeDisk {
        fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
            if path == self.save_file && self.faults().unreadable_file {
                return Err(denied());
            }
            self.file(path)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "No such file"))
        }

        fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
            let faults = self.faults();
            let exists = self.file(path).is_some();
            if faults.read_only_folder && !exists {
                return Err(denied());
            }
            if faults.read_only_file && path == self.save_file {
                return Err(denied());
            }
            let kept = if faults.short_writes {
                &bytes[..bytes.len() / 2]
            } else {
                bytes
            };
            if let Ok(mut files) = self.files.lock() {
                files.insert(path.to_owned(), kept.to_vec());
            }
            Ok(())
        }

        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            let faults = self.faults();
            if faults.read_only_folder || (faults.read_only_file && to == self.save_file) {
                return Err(denied());
            }
            let mut files = self.files.lock().map_err(|_| denied())?;
            let bytes = files
                .remove(from)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "No such file"))?;
            files.insert(to.to_owned(), bytes);
            Ok(())
        }

        fn remove(&self, path: &Path) -> io::Result<()> {
            if self.faults().read_only_folder {
                return Err(denied());
            }
            self.files.lock().map_err(|_| denied())?.remove(path);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{FakeDisk, Faults};
    use super::*;
    use crate::persist::Store as _;

    const PROGRESS: &str = r#"{"dlsys-lab/v1": "(lesson:\"gpu_kernels\")"}"#;

    fn path() -> PathBuf {
        PathBuf::from("/data/dlsys-lab/app.ron")
    }

    fn open(contents: Option<&[u8]>, faults: Faults) -> (FakeDisk, Opened) {
        let disk = FakeDisk::new(&path(), contents, faults);
        let opened = SaveFile::open(Box::new(disk.clone()), &path(), 7);
        (disk, opened)
    }

    /// Saves a change and returns what the learner is told about it.
    fn save(file: &mut SaveFile) -> Option<String> {
        file.set_string("dlsys-lab/v1", "(lesson:\"welcome\")".to_owned());
        file.flush();
        file.take_failure().map(|n| n.to_string())
    }

    #[test]
    fn a_readable_file_is_read_and_saved_over() {
        let (disk, mut opened) = open(Some(PROGRESS.as_bytes()), Faults::default());
        assert!(opened.notice.is_none());
        assert_eq!(
            opened.file.get_string("dlsys-lab/v1").as_deref(),
            Some("(lesson:\"gpu_kernels\")")
        );
        assert_eq!(save(&mut opened.file), None);
        let saved = String::from_utf8(disk.file(&path()).unwrap_or_default()).unwrap_or_default();
        assert!(saved.contains("welcome"), "{saved}");
        assert!(
            disk.file(Path::new("/data/dlsys-lab/app.ron.tmp"))
                .is_none()
        );
    }

    #[test]
    fn a_corrupt_file_is_moved_aside_byte_for_byte() {
        let (disk, mut opened) = open(Some(b"garbage {{{"), Faults::default());
        assert!(
            opened
                .notice
                .is_some_and(|n| n.to_string().contains("app.ron.unreadable-7"))
        );
        assert_eq!(
            disk.file(Path::new("/data/dlsys-lab/app.ron.unreadable-7"))
                .as_deref(),
            Some(&b"garbage {{{"[..])
        );
        assert_eq!(save(&mut opened.file), None);
    }

    #[test]
    fn a_corrupt_file_in_a_read_only_folder_is_never_written_over() {
        let faults = Faults {
            read_only_folder: true,
            ..Faults::default()
        };
        let (disk, mut opened) = open(Some(b"garbage {{{"), faults);
        let notice = opened
            .notice
            .take()
            .map(|n| n.to_string())
            .unwrap_or_default();
        assert!(
            notice.contains("could not be moved aside")
                && notice.contains("will not write over it"),
            "{notice}"
        );
        // The session's saves fail (the folder is read-only), and say so.
        let failure = save(&mut opened.file).unwrap_or_default();
        assert!(
            failure.contains("Could not save") && failure.contains("Permission denied"),
            "{failure}"
        );
        assert_eq!(disk.file(&path()).as_deref(), Some(&b"garbage {{{"[..]));
        // Told once, not on every save.
        assert_eq!(save(&mut opened.file), None);
    }

    #[test]
    fn an_unreadable_file_keeps_its_bytes_and_the_session_saves_beside_it() {
        let faults = Faults {
            unreadable_file: true,
            ..Faults::default()
        };
        let (disk, mut opened) = open(Some(PROGRESS.as_bytes()), faults);
        assert!(
            opened
                .notice
                .is_some_and(|n| n.to_string().contains("app.ron.session-7"))
        );
        assert_eq!(save(&mut opened.file), None);
        assert_eq!(disk.file(&path()).as_deref(), Some(PROGRESS.as_bytes()));
        let session = disk
            .file(Path::new("/data/dlsys-lab/app.ron.session-7"))
            .unwrap_or_default();
        assert!(String::from_utf8_lossy(&session).contains("welcome"));
    }

    #[test]
    fn a_read_only_file_or_folder_says_so_and_loses_nothing() {
        for faults in [
            Faults {
                read_only_file: true,
                ..Faults::default()
            },
            Faults {
                read_only_folder: true,
                ..Faults::default()
            },
        ] {
            let (disk, mut opened) = open(Some(PROGRESS.as_bytes()), faults);
            assert!(opened.notice.is_none());
            let failure = save(&mut opened.file).unwrap_or_default();
            assert!(
                failure.contains("Permission denied") && failure.contains("tried again"),
                "{faults:?}: {failure}"
            );
            assert_eq!(
                disk.file(&path()).as_deref(),
                Some(PROGRESS.as_bytes()),
                "{faults:?}"
            );
            // Once the disk is writable again, the next change is saved.
            *disk.faults.lock().unwrap_or_else(|e| e.into_inner()) = Faults::default();
            assert_eq!(save(&mut opened.file), None);
            let saved = disk.file(&path()).unwrap_or_default();
            assert!(
                String::from_utf8_lossy(&saved).contains("welcome"),
                "{faults:?}"
            );
        }
    }

    #[test]
    fn a_short_write_never_replaces_the_save() {
        let faults = Faults {
            short_writes: true,
            ..Faults::default()
        };
        let (disk, mut opened) = open(Some(PROGRESS.as_bytes()), faults);
        let failure = save(&mut opened.file).unwrap_or_default();
        assert!(failure.contains("bytes reached the disk"), "{failure}");
        assert_eq!(disk.file(&path()).as_deref(), Some(PROGRESS.as_bytes()));
    }

    #[test]
    fn the_real_disk_round_trips() {
        let dir = std::env::temp_dir().join(format!("dlsys-save-{}", std::process::id()));
        let path = dir.join("app.ron");
        let mut opened = SaveFile::open(Box::new(RealDisk), &path, 1);
        assert!(opened.notice.is_none());
        assert_eq!(save(&mut opened.file), None);
        let again = SaveFile::open(Box::new(RealDisk), &path, 2);
        assert_eq!(
            again.file.get_string("dlsys-lab/v1").as_deref(),
            Some("(lesson:\"welcome\")")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
