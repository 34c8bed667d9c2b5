//! Recording the folder file documents' ids are relative to (`meta.file_root`): one small
//! value, written in a transaction of its own.

use crate::input::FileRoot;
use crate::limits::InvalidParameter;
use crate::storage::error::WriteError;
use crate::storage::file::records::encode_file_root;
use crate::storage::file::sealed::WriteSealed;
use crate::storage::file::tables::{FILE_ROOT, META};
use crate::storage::write::writer::Writer;

impl Writer<'_> {
    pub(crate) fn set_file_root(&self, root: &FileRoot) -> Result<(), WriteError> {
        let refused = || {
            InvalidParameter::new(
                "file root",
                root.path.display(),
                "an absolute path in UTF-8",
            )
        };
        if !root.path.is_absolute() {
            return Err(refused().into());
        }
        let value = encode_file_root(root).ok_or_else(refused)?;
        let mut turn = self.lock_writer()?;
        let txn = turn.txn()?;
        txn.open_table(META)?.put(FILE_ROOT, value.as_slice())?;
        txn.commit()?;
        Ok(())
    }
}
