//! [`ImageStore`]: import, list, remove and resolve images.

use std::fs::{self, File};
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use super::digest::{HashingReader, decompress};
use super::error::ImageError;
use super::layout::{LayerRecord, Layout, Lock, Record, Staging};
use super::progress::{Counted, ImportProgress, Unwatched};
use super::reference::{Reference, validate_name};
use super::source::{self, ImportPlan, LayerSource};
use super::unpack::{Mode, open_in_root, unpack};
use super::{Image, ImageInfo, ImageRoot};

/// The name shown for an image whose name another import took.
pub const UNNAMED: &str = "<none>";

/// A content-addressed image store in one directory.
///
/// Images are named by the sha256 digest of their **config** (what docker
/// calls the image id): the config lists the `diff_id` of every layer, so
/// it pins the content, and it is the same whether the image arrived as an
/// OCI layout or a `docker save` archive, gzip'd or not. One record per
/// digest and one image per name: importing under a name another image has
/// re-points the name, and the other image stays (unnamed, shown as
/// `<none>`, when that was its only name), reachable by digest until
/// removed; importing a stored digest again under another name adds the
/// name, and the image keeps its earlier ones. Removing one of several
/// names removes only the name; removing the last one (or by digest)
/// removes the image, unless a live sandbox runs on it.
#[derive(Debug, Clone)]
pub struct ImageStore {
    pub(super) layout: Layout,
}

impl ImageStore {
    /// Opens (creating) the store in `dir`. Opening changes nothing in it:
    /// what interrupted imports left is taken back by [`Self::reclaim`],
    /// which the backend's `gc` runs.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, ImageError> {
        let layout = Layout::create(dir.into())?;
        Ok(ImageStore { layout })
    }

    /// Removes what interrupted imports and removals left behind (staging
    /// directories, layers and blobs no record names), when none is in
    /// flight; returns whether the store was free to sweep.
    pub fn reclaim(&self) -> Result<bool, ImageError> {
        match self.layout.lock(false)? {
            Some(lock) => self.layout.sweep(&lock).map(|()| true),
            None => Ok(false),
        }
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        self.layout.dir()
    }

    /// The built-in `host` image (see [`super::host_image`]).
    pub fn host_image() -> Image {
        super::host_image()
    }

    /// Imports an OCI image layout (a directory, or a tar of one) or a
    /// `docker save` archive (tar, optionally gzip/zstd compressed), naming
    /// it `name`, else the name the archive gives, else the first 12 hex
    /// digits of its digest.
    pub fn import(&self, archive: &Path, name: Option<&str>) -> Result<ImageInfo, ImageError> {
        self.import_watched(archive, name, &Unwatched)
    }

    /// [`Self::import`], telling `progress` how it goes: the archive's
    /// bytes as they are read, then each layer as it is verified and
    /// stored.
    pub fn import_watched(
        &self,
        archive: &Path,
        name: Option<&str>,
        progress: &dyn ImportProgress,
    ) -> Result<ImageInfo, ImageError> {
        if let Some(n) = name {
            validate_name(n)?;
        }
        let lock = self.layout.lock(true)?.ok_or_else(|| {
            ImageError::io(
                "locking the image store",
                io::Error::other("lock unavailable"),
            )
        })?;
        let result = self.import_locked(archive, name, progress);
        if result.is_err() {
            // Layers committed before the failure belong to no record.
            let _ = self.layout.sweep(&lock);
        }
        result
    }

    fn import_locked(
        &self,
        archive: &Path,
        name: Option<&str>,
        progress: &dyn ImportProgress,
    ) -> Result<ImageInfo, ImageError> {
        let staging = self.layout.staging()?;
        let meta = fs::metadata(archive)
            .map_err(|e| ImageError::io(format!("reading {}", archive.display()), e))?;
        let root = if meta.is_dir() {
            archive.to_path_buf()
        } else {
            let root = staging.path().join("src");
            fs::create_dir(&root).map_err(|e| ImageError::io("creating a staging directory", e))?;
            let file = File::open(archive)
                .map_err(|e| ImageError::io(format!("opening {}", archive.display()), e))?;
            progress.reading(meta.len());
            let counted = Counted {
                inner: file,
                progress,
            };
            unpack(decompress(BufReader::new(counted))?, &root, Mode::Plain)
                .map_err(|e| e.within(archive.display()))?;
            root
        };
        let plan = source::plan(&root, name)?;
        let name = pick_name(name, &plan);
        self.store_config(&staging, &plan)?;
        let mut layers = Vec::with_capacity(plan.layers.len());
        for (i, layer) in plan.layers.iter().enumerate() {
            progress.layer(i + 1, plan.layers.len(), &layer.diff_id);
            layers.push(self.store_layer(&staging, &root, i, layer)?);
        }
        let also = match self.layout.read(&plan.config_digest)? {
            Some(old) => old
                .names()
                .filter(|n| *n != name)
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        let record = Record {
            name: Some(name),
            also,
            digest: plan.config_digest.clone(),
            created_at_ms: corral_backend::now_ms(),
            layers,
            manifest: plan.manifest,
        };
        self.take_name(&record)?;
        self.layout.write(&record)?;
        Ok(info(&record))
    }

    fn store_config(&self, staging: &Staging, plan: &ImportPlan) -> Result<(), ImageError> {
        let staged = staging.path().join("config");
        fs::write(&staged, &plan.config).map_err(|e| ImageError::io("staging the config", e))?;
        self.layout
            .commit(&staged, &self.layout.blob(&plan.config_digest))
    }

    /// Copies the layer blob in (checking its digest), unpacks it unless its
    /// diff_id is stored already (checking the diff_id either way).
    fn store_layer(
        &self,
        staging: &Staging,
        root: &Path,
        i: usize,
        layer: &LayerSource,
    ) -> Result<LayerRecord, ImageError> {
        let staged_blob = staging.path().join(format!("blob-{i}"));
        let mut src = HashingReader::new(open_in_root(root, &layer.rel_path)?);
        let mut out =
            File::create(&staged_blob).map_err(|e| ImageError::io("staging a layer", e))?;
        io::copy(&mut src, &mut out)
            .map_err(|e| ImageError::io(format!("copying layer {:?}", layer.rel_path), e))?;
        let (blob, size) = src.finish();
        if let Some(expected) = &layer.blob_digest
            && *expected != blob
        {
            return Err(ImageError::DigestMismatch {
                what: format!("layer {:?}", layer.rel_path),
                expected: expected.clone(),
                actual: blob,
            });
        }
        let target = self.layout.layer(&layer.diff_id);
        let staged_dir = staging.path().join(format!("layer-{i}"));
        let file = File::open(&staged_blob).map_err(|e| ImageError::io("reopening a layer", e))?;
        let mut diff = HashingReader::new(decompress(BufReader::new(file))?);
        if target.exists() {
            diff.drain()
                .map_err(|e| ImageError::archive(format!("layer {:?}: {e}", layer.rel_path)))?;
        } else {
            fs::create_dir(&staged_dir).map_err(|e| ImageError::io("staging a layer", e))?;
            unpack(&mut diff, &staged_dir, Mode::Layer)
                .map_err(|e| e.within(format!("layer {:?}", layer.rel_path)))?;
            diff.drain()
                .map_err(|e| ImageError::archive(format!("layer {:?}: {e}", layer.rel_path)))?;
        }
        let (diff_id, _) = diff.finish();
        if diff_id != layer.diff_id {
            return Err(ImageError::DigestMismatch {
                what: format!("uncompressed layer {:?}", layer.rel_path),
                expected: layer.diff_id.clone(),
                actual: diff_id,
            });
        }
        self.layout.commit(&staged_blob, &self.layout.blob(&blob))?;
        if !target.exists() {
            self.layout.commit(&staged_dir, &target)?;
        }
        Ok(LayerRecord {
            diff_id,
            blob,
            size,
        })
    }

    /// Names the stored image `digest` (its config's) `name`, as importing
    /// it again under that name would, without reading its layers again:
    /// they were verified when it was imported. `None` when no image of
    /// that digest is stored.
    pub fn name_stored(&self, digest: &str, name: &str) -> Result<Option<ImageInfo>, ImageError> {
        validate_name(name)?;
        let _lock = self.layout.lock(true)?.ok_or_else(|| {
            ImageError::io(
                "locking the image store",
                io::Error::other("lock unavailable"),
            )
        })?;
        let Some(old) = self.layout.read(digest)? else {
            return Ok(None);
        };
        let record = Record {
            name: Some(name.to_string()),
            also: old
                .names()
                .filter(|n| *n != name)
                .map(str::to_string)
                .collect(),
            created_at_ms: corral_backend::now_ms(),
            ..old
        };
        self.take_name(&record)?;
        self.layout.write(&record)?;
        Ok(Some(info(&record)))
    }

    /// Takes `record`'s first name from any other image.
    fn take_name(&self, record: &Record) -> Result<(), ImageError> {
        let Some(name) = &record.name else {
            return Ok(());
        };
        for mut other in self.layout.records()? {
            if other.digest != record.digest && other.has_name(name) {
                other.drop_name(name);
                self.layout.write(&other)?;
            }
        }
        Ok(())
    }

    /// Every image: the built-in `host` first (no layers, size 0, created 0),
    /// then the stored ones, oldest first, one row per name (an image with
    /// no name is one `<none>` row).
    pub fn list(&self) -> Result<Vec<ImageInfo>, ImageError> {
        let mut records = self.layout.records()?;
        records.sort_by(|a, b| {
            a.created_at_ms
                .cmp(&b.created_at_ms)
                .then_with(|| a.digest.cmp(&b.digest))
        });
        let host = super::host_image();
        let mut out = vec![ImageInfo {
            name: host.name,
            digest: host.digest,
            size_bytes: 0,
            layers: 0,
            created_at_ms: 0,
        }];
        for r in &records {
            let row = info(r);
            if r.name.is_none() && r.also.is_empty() {
                out.push(row.clone());
            }
            out.extend(r.names().map(|n| ImageInfo {
                name: n.to_string(),
                ..row.clone()
            }));
        }
        Ok(out)
    }

    /// Removes a stored image (by name, `name@sha256:…` or `sha256:…`) and
    /// every layer and blob no other image uses. The built-in `host` image is
    /// a `conflict`. Removing one name of an image that has others removes
    /// only that name. Otherwise an image live sandboxes run on is a
    /// `conflict` naming them ([`ImageError::InUse`]): they must be gone
    /// first.
    pub fn remove(&self, reference: &str) -> Result<ImageInfo, ImageError> {
        if let Reference::Host { .. } = Reference::parse(reference)? {
            return Err(ImageError::Builtin {
                reference: reference.to_string(),
            });
        }
        let lock: Lock = self.layout.lock(true)?.ok_or_else(|| {
            ImageError::io(
                "locking the image store",
                io::Error::other("lock unavailable"),
            )
        })?;
        let mut record = self.find(reference)?;
        if let Reference::Name { name, .. } = Reference::parse(reference)?
            && record.names().count() > 1
        {
            record.drop_name(&name);
            self.layout.write(&record)?;
            return Ok(ImageInfo {
                name,
                ..info(&record)
            });
        }
        let sandboxes = super::live_users(self.dir(), &record.digest);
        if !sandboxes.is_empty() {
            return Err(ImageError::InUse {
                reference: reference.to_string(),
                sandboxes,
            });
        }
        self.layout.delete(&record.digest)?;
        self.layout.sweep(&lock)?;
        Ok(info(&record))
    }

    /// Resolves a reference to an image ready to mount: `host` (or
    /// `host@sha256:…`, digest checked), a stored name, `name@sha256:…`
    /// (digest checked) or `sha256:…`. A digest that does not match is
    /// `not_found`.
    pub fn resolve(&self, reference: &str) -> Result<Image, ImageError> {
        if let Reference::Host { digest } = Reference::parse(reference)? {
            let host = super::host_image();
            return match digest {
                Some(d) if d != host.digest => Err(ImageError::NotFound {
                    reference: reference.to_string(),
                }),
                _ => Ok(host),
            };
        }
        let record = self.find(reference)?;
        let mut dirs = Vec::with_capacity(record.layers.len());
        for l in record.layers.iter().rev() {
            let dir = self.layout.layer(&l.diff_id);
            if !dir.is_dir() {
                return Err(ImageError::CorruptRecord {
                    path: dir.display().to_string(),
                    reason: "layer directory missing; import the image again".into(),
                });
            }
            dirs.push(dir);
        }
        Ok(Image {
            name: record.name.clone().unwrap_or_else(|| UNNAMED.to_string()),
            digest: record.digest,
            root: ImageRoot::Layers(dirs),
        })
    }

    /// The record a (non-host) reference names.
    pub(super) fn find(&self, reference: &str) -> Result<Record, ImageError> {
        let not_found = || ImageError::NotFound {
            reference: reference.to_string(),
        };
        match Reference::parse(reference)? {
            Reference::Host { .. } => Err(not_found()),
            Reference::Digest(d) => self.layout.read(&d)?.ok_or_else(not_found),
            Reference::Name { name, digest } => {
                let record = self
                    .layout
                    .records()?
                    .into_iter()
                    .find(|r| r.has_name(&name))
                    .ok_or_else(not_found)?;
                match digest {
                    Some(d) if d != record.digest => Err(not_found()),
                    _ => Ok(record),
                }
            }
        }
    }
}

fn pick_name(given: Option<&str>, plan: &ImportPlan) -> String {
    if let Some(n) = given {
        return n.to_string();
    }
    if let Some(n) = &plan.suggested_name
        && validate_name(n).is_ok()
    {
        return n.clone();
    }
    let hex = plan.config_digest.trim_start_matches("sha256:");
    hex.chars().take(12).collect()
}

pub(super) fn info(r: &Record) -> ImageInfo {
    ImageInfo {
        name: r.name.clone().unwrap_or_else(|| UNNAMED.to_string()),
        digest: r.digest.clone(),
        size_bytes: r.layers.iter().map(|l| l.size).sum(),
        layers: r.layers.len(),
        created_at_ms: r.created_at_ms,
    }
}
