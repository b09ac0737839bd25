//! A swap folder and the files a run makes in it, never through a link.
//!
//! A swap folder (`--swap-dir`) may be on a disk shared with other users, who can place
//! symbolic links, FIFOs, hard links or files of their own under the names a run uses
//! (`app`, `app.table`, `marvin.lock`, ...). A [`SwapFolder`] is the folder opened once:
//!
//! * **The folder is checked when it is opened**: it must belong to the run's user (or to
//!   root) and must not be writable by other users unless it has the sticky bit (as
//!   `/tmp` has), since anyone who may rename entries in it could swap a run's file for a
//!   link at any time. A folder given as a symbolic link is followed only when the link
//!   belongs to the run's user or to root.
//! * **Every file is made relative to the folder's descriptor** (`openat`, `renameat`,
//!   `linkat`, `unlinkat`), so a folder renamed or replaced after it was opened changes
//!   nothing, and **created new** (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600): a name
//!   that is already taken is replaced only when it holds a plain file of the run's user
//!   with no other link (an earlier run's leftover, which only that user or root could
//!   have made); a symbolic link, a FIFO or any other special file, another user's file
//!   or a file with a second link (a hard link to a file elsewhere) is refused with an
//!   error naming the path and what was found there, and never opened.
//! * **A file that must persist** (the lock file) is opened without following a link and
//!   without waiting on a FIFO (`O_NOFOLLOW | O_NONBLOCK`), and used only when it is a
//!   plain file of the run's user with one link.
//! * **Renames move only the run's own files** ([`SwapFolder::rename_own`]): both names
//!   must name the files the caller holds, checked by device and inode just before.
//!
//! The calls go through `rustix`, which needs no `unsafe` here.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

/// Why a swap folder or a file in it was refused.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// The folder itself may not be used: another user could replace the run's files.
    #[error("swap directory {} is refused: {reason}", path.display())]
    UnsafeFolder {
        /// The folder as given.
        path: PathBuf,
        /// What is wrong and how to mend it.
        reason: String,
    },
    /// A name the run uses is taken by something the run did not make.
    #[error("{} is refused: it is {found}, not a file this run made; marvin never writes through it (remove it, or give another swap directory)", path.display())]
    Taken {
        /// The path of the name.
        path: PathBuf,
        /// What is there ("a symbolic link", "a FIFO", "a file of user 1000", ...).
        found: String,
    },
    /// A file that should be the run's own was replaced meanwhile.
    #[error("{} was replaced by something this run did not make: not renamed", path.display())]
    Replaced {
        /// The path of the name.
        path: PathBuf,
    },
    /// The operating system refused an operation.
    #[error("{}: cannot {op}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

impl FolderError {
    /// The operating system's error, if that is what this is.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            FolderError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A swap folder, opened and checked once; its files are made relative to it.
#[derive(Debug)]
pub struct SwapFolder {
    dir: OwnedFd,
    path: PathBuf,
    uid: u32,
}

impl SwapFolder {
    /// Opens the folder at `path` (which must exist) and checks that only the run's user
    /// (or root) can change its entries; see the module doc.
    pub fn open(path: &Path) -> Result<SwapFolder, FolderError> {
        let uid = run_user();
        let unsafe_folder = |reason: String| FolderError::UnsafeFolder {
            path: path.to_owned(),
            reason,
        };
        let io = |op, source: io::Error| FolderError::Io {
            op,
            path: path.to_owned(),
            source,
        };
        let link = std::fs::symlink_metadata(path).map_err(|e| io("look up the folder", e))?;
        if link.file_type().is_symlink() && !trusted_owner(link.uid(), uid) {
            return Err(unsafe_folder(format!(
                "it is a symbolic link of user {}, which is not followed",
                link.uid()
            )));
        }
        let dir = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("open the folder", e.into()))?;
        let st = rustix::fs::fstat(&dir).map_err(|e| io("look up the folder", e.into()))?;
        check_folder(&st, uid).map_err(unsafe_folder)?;
        Ok(SwapFolder {
            dir,
            path: path.to_owned(),
            uid,
        })
    }

    /// The folder as it was given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in the folder (for messages and for other processes).
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The folder's device and inode: two opens of one folder are the same folder.
    pub fn identity(&self) -> Result<(u64, u64), FolderError> {
        let st = rustix::fs::fstat(&self.dir).map_err(|e| self.io("look up", "", e))?;
        Ok((st.st_dev, st.st_ino))
    }

    /// Creates `name` new, read-write, mode 0600, never through a link: an earlier run's
    /// leftover there (a plain file of this user, one link) is removed first; anything
    /// else there is refused ([`FolderError::Taken`]).
    pub fn create_new(&self, name: &str) -> Result<File, FolderError> {
        check_name(name);
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        // Twice at most: a leftover is removed once; a name taken again at once is
        // somebody else's doing.
        for _ in 0..2 {
            match rustix::fs::openat(
                &self.dir,
                name,
                flags | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => return Ok(File::from(fd)),
                Err(rustix::io::Errno::EXIST) => {
                    let st = self.stat(name)?.ok_or_else(|| self.taken(name, "gone"))?;
                    self.check_own(name, &st)?;
                    match rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()) {
                        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                        Err(e) => return Err(self.io("remove an earlier run's", name, e)),
                    }
                }
                Err(e) => return Err(self.io("create", name, e)),
            }
        }
        Err(self.taken(name, "a name taken again as soon as it was freed"))
    }

    /// Opens `name` read-write if it exists and is a plain file of this user with one
    /// link (`None` when there is no such name), without following a link or waiting on
    /// a FIFO; anything else is refused ([`FolderError::Taken`]).
    pub fn open_own(&self, name: &str) -> Result<Option<File>, FolderError> {
        check_name(name);
        let flags = OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
        match rustix::fs::openat(&self.dir, name, flags | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => {
                let st = rustix::fs::fstat(&fd).map_err(|e| self.io("look up", name, e))?;
                self.check_own(name, &st)?;
                Ok(Some(File::from(fd)))
            }
            Err(rustix::io::Errno::NOENT) => Ok(None),
            // The only reason `O_NOFOLLOW` gives this: the name is a symbolic link.
            Err(rustix::io::Errno::LOOP) => Err(self.taken(name, "a symbolic link")),
            Err(e) => Err(self.io("open", name, e)),
        }
    }

    /// Whether `file` is what `name` names now (same device and inode).
    pub fn names(&self, name: &str, file: &File) -> Result<bool, FolderError> {
        let meta = file.metadata().map_err(|e| FolderError::Io {
            op: "look up",
            path: self.path_of(name),
            source: e,
        })?;
        Ok(self
            .stat(name)?
            .is_some_and(|st| st.st_dev == meta.dev() && st.st_ino == meta.ino()))
    }

    /// Renames `from` over `to`, both in this folder, when `from` names `from_file` and
    /// `to` names `to_file` (or nothing, when `to_file` is `None`): a rename moves only
    /// the caller's own files, never a link or a file another user put in their place.
    pub fn rename_own(
        &self,
        from: (&str, &File),
        to: (&str, Option<&File>),
    ) -> Result<(), FolderError> {
        check_name(from.0);
        check_name(to.0);
        if !self.names(from.0, from.1)? {
            return Err(FolderError::Replaced {
                path: self.path_of(from.0),
            });
        }
        let to_ok = match to.1 {
            Some(file) => self.names(to.0, file)?,
            None => self.stat(to.0)?.is_none(),
        };
        if !to_ok {
            return Err(FolderError::Replaced {
                path: self.path_of(to.0),
            });
        }
        rustix::fs::renameat(&self.dir, from.0, &self.dir, to.0)
            .map_err(|e| self.io("rename into place", to.0, e))
    }

    /// Links `from` (a file this run made) as `to` as well; fails if `to` exists. Never
    /// follows a link.
    pub fn link(&self, from: &str, to: &str) -> Result<(), FolderError> {
        check_name(from);
        check_name(to);
        rustix::fs::linkat(&self.dir, from, &self.dir, to, AtFlags::empty()).map_err(|e| {
            if e == rustix::io::Errno::EXIST {
                FolderError::Io {
                    op: "link",
                    path: self.path_of(to),
                    source: io::ErrorKind::AlreadyExists.into(),
                }
            } else {
                self.io("link", to, e)
            }
        })
    }

    /// Removes the name `name` (a file this run made); nothing there is no error.
    pub fn remove(&self, name: &str) -> Result<(), FolderError> {
        check_name(name);
        match rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(self.io("remove", name, e)),
        }
    }

    /// What `name` is (not following a link), `None` when there is nothing.
    fn stat(&self, name: &str) -> Result<Option<Stat>, FolderError> {
        match rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(self.io("look up", name, e)),
        }
    }

    /// Refuses `st` (what `name` is) unless it is a plain file of this user with one link.
    fn check_own(&self, name: &str, st: &Stat) -> Result<(), FolderError> {
        match own_file_problem(st, self.uid) {
            None => Ok(()),
            Some(found) => Err(self.taken(name, &found)),
        }
    }

    fn taken(&self, name: &str, found: &str) -> FolderError {
        FolderError::Taken {
            path: self.path_of(name),
            found: found.to_owned(),
        }
    }

    fn io(&self, op: &'static str, name: &str, e: rustix::io::Errno) -> FolderError {
        FolderError::Io {
            op,
            path: self.path_of(name),
            source: e.into(),
        }
    }
}

/// The run's user: the effective user id, whose files a swap folder's run makes.
pub fn run_user() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Root may change anything anyway: a folder or link of root's is as trusted as one's own.
fn trusted_owner(owner: u32, uid: u32) -> bool {
    owner == uid || owner == 0
}

/// Why a folder with `st` cannot hold a run of user `uid`'s files, if it cannot.
fn check_folder(st: &Stat, uid: u32) -> Result<(), String> {
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Err("it is not a directory".into());
    }
    if !trusted_owner(st.st_uid, uid) {
        return Err(format!(
            "it belongs to user {}, not to this run's user {uid} (or root), and its owner \
             could replace the run's files with links; give a directory of your own",
            st.st_uid
        ));
    }
    let mode = st.st_mode & 0o7777;
    let others_write = mode & 0o022 != 0;
    let sticky = mode & 0o1000 != 0;
    if others_write && !sticky {
        return Err(format!(
            "it is writable by other users (mode {mode:04o}) and has no sticky bit, so they \
             could replace the run's files with links; remove their write permission \
             (chmod go-w) or set the sticky bit (chmod +t)"
        ));
    }
    Ok(())
}

/// What is wrong with `st` as a file of user `uid`'s own making, if anything.
fn own_file_problem(st: &Stat, uid: u32) -> Option<String> {
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => None,
        FileType::Symlink => Some("a symbolic link"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Directory => Some("a directory"),
        FileType::Socket => Some("a socket"),
        FileType::CharacterDevice | FileType::BlockDevice => Some("a device"),
        FileType::Unknown => Some("not a plain file"),
    };
    if let Some(kind) = kind {
        return Some(kind.to_owned());
    }
    if st.st_uid != uid {
        return Some(format!("a file of user {}", st.st_uid));
    }
    if st.st_nlink != 1 {
        return Some(format!(
            "a file with {} links (a hard link to a file elsewhere)",
            st.st_nlink
        ));
    }
    None
}

/// The run's names are plain names of the folder, never paths (a caller's bug otherwise).
fn check_name(name: &str) {
    assert!(
        !name.is_empty() && name != "." && name != ".." && !name.contains('/'),
        "{name:?} is not a plain file name"
    );
}

#[cfg(test)]
mod tests;
