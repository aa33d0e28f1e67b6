//! Artifact stores and references, at the edges the older tests left open.

use abridge_prune::ArtifactId;
use abridge_prune::ArtifactRef;
use abridge_prune::ArtifactStore;
use abridge_prune::DirArtifactStore;
use abridge_prune::MemoryArtifactStore;
use abridge_prune::PruneError;

fn id_of(bytes: &[u8]) -> ArtifactId {
    ArtifactId::for_content(bytes)
}

#[test]
fn a_region_may_be_empty_but_not_reversed() {
    let id = id_of(b"x");
    let empty = ArtifactRef::parse(&format!("artifact://{id}#5-5")).unwrap();
    assert_eq!(empty.region, Some(5..5));
    assert!(matches!(
        ArtifactRef::parse(&format!("artifact://{id}#6-5")),
        Err(PruneError::BadReference { .. })
    ));
}

#[test]
fn a_memory_store_is_empty_until_something_is_put() {
    let store = MemoryArtifactStore::new();
    assert!(store.is_empty());
    store.put(b"bytes").unwrap();
    assert!(!store.is_empty());
}

#[test]
fn a_missing_artifact_names_the_store_it_was_looked_for_in() {
    let memory = MemoryArtifactStore::new();
    assert_eq!(memory.location(), "memory");
    let dir = tempfile::tempdir().unwrap();
    let disk = DirArtifactStore::open(dir.path()).unwrap();
    let root = disk.root().display().to_string();
    assert_eq!(disk.location(), root);
    let stores: [(&dyn ArtifactStore, &str); 2] = [(&memory, "memory"), (&disk, &root)];
    for (store, location) in stores {
        match store.get(&id_of(b"never stored")) {
            Err(PruneError::NotFound { root, .. }) => assert_eq!(root, location),
            other => panic!("{location}: expected NotFound, got {other:?}"),
        }
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_between_two_artifacts_of_one_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirArtifactStore::open(dir.path()).unwrap();
    let real = store.put(b"real").unwrap();
    let alias = id_of(b"alias");
    std::os::unix::fs::symlink(
        store.root().join(real.as_str()),
        store.root().join(alias.as_str()),
    )
    .unwrap();
    assert!(matches!(
        store.get(&alias),
        Err(PruneError::OutsideStore { .. })
    ));
}

#[test]
fn a_directory_where_an_artifact_should_be_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirArtifactStore::open(dir.path()).unwrap();
    let id = id_of(b"dir");
    std::fs::create_dir(store.root().join(id.as_str())).unwrap();
    assert!(matches!(
        store.resolve_path(id.as_str()),
        Err(PruneError::OutsideStore { .. })
    ));
}
