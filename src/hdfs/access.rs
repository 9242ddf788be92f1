//! Who may do what with a path: owner, group, permission bits and ACL, read and given to a copy.

use hdfs_native::acl::AclEntry;
use hdfs_native::HdfsError;

use super::client::Hdfs;
use super::error::FsError;
use super::location::Location;
use super::tasks::Client;

/// Who may do what with a path: what a copy must carry to be used like the original.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    pub owner: String,
    pub group: String,
    /// With an ACL, the group bits are the ACL's mask.
    pub permission: u16,
    /// The ACL's entries beyond the permission bits, default (inherited) entries included;
    /// empty without an ACL.
    pub acl: Vec<AclEntry>,
}

/// What reading a path's ACL status found.
enum AclRead {
    Status(hdfs_native::acl::AclStatus),
    Missing,
    /// The NameNode has ACLs disabled (`dfs.namenode.acls.enabled=false`).
    Disabled,
}

/// One part of an [`Access`] that could not be given to a path.
#[derive(Debug)]
pub struct NotKept {
    pub target: Location,
    /// `owner`, `group`, `permission` or `ACL`.
    pub what: &'static str,
    pub error: FsError,
}

/// Whether two ACLs hold the same entries: the NameNode returns them in no promised order.
pub fn same_acl(a: &[AclEntry], b: &[AclEntry]) -> bool {
    a.len() == b.len() && a.iter().all(|e| b.contains(e))
}

impl Hdfs {
    /// Changes the owner, the group, or both (`None` leaves it as it is).
    pub async fn set_owner(
        &self,
        target: &Location,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), FsError> {
        let client = self.client(target)?;
        client
            .set_owner(&target.path, owner, group)
            .await
            .map_err(Self::io("changing the owner of", target))
    }

    pub async fn set_permission(&self, target: &Location, permission: u16) -> Result<(), FsError> {
        let client = self.client(target)?;
        client
            .set_permission(&target.path, u32::from(permission))
            .await
            .map_err(Self::io("changing the permission of", target))
    }

    /// Owner, group, permission and ACL of a path (one call); `Ok(None)` when it does not
    /// exist. On a NameNode with ACLs disabled, the ACL is empty.
    pub async fn access(&self, target: &Location) -> Result<Option<Access>, FsError> {
        match self.acl_status(target).await? {
            AclRead::Status(a) => Ok(Some(Access {
                owner: a.owner,
                group: a.group,
                permission: a.permission,
                acl: a.entries,
            })),
            AclRead::Missing => Ok(None),
            AclRead::Disabled => Ok(self.status(target).await?.map(|s| Access {
                owner: s.owner,
                group: s.group,
                permission: s.permission,
                acl: vec![],
            })),
        }
    }

    /// The ACL entries of a path: empty when it has none (or is gone), `None` when the
    /// NameNode has ACLs disabled, so that no path has one.
    pub async fn acl(&self, target: &Location) -> Result<Option<Vec<AclEntry>>, FsError> {
        Self::acl_with(&self.client(target)?, target).await
    }

    /// [`Hdfs::acl`] through `client` (that of `target`'s filesystem), for a task that owns a
    /// clone of it.
    pub async fn acl_with(
        client: &Client,
        target: &Location,
    ) -> Result<Option<Vec<AclEntry>>, FsError> {
        Ok(match Self::acl_status_with(client, target).await? {
            AclRead::Status(a) => Some(a.entries),
            AclRead::Missing => Some(vec![]),
            AclRead::Disabled => None,
        })
    }

    /// One `getAclStatus`, its two expected failures told apart from the rest.
    async fn acl_status(&self, target: &Location) -> Result<AclRead, FsError> {
        Self::acl_status_with(&self.client(target)?, target).await
    }

    async fn acl_status_with(client: &Client, target: &Location) -> Result<AclRead, FsError> {
        match client.get_acl_status(&target.path).await {
            Ok(a) => Ok(AclRead::Status(a)),
            Err(HdfsError::FileNotFound(_)) => Ok(AclRead::Missing),
            Err(HdfsError::RPCError(class, _)) if class.ends_with("AclException") => {
                Ok(AclRead::Disabled)
            }
            Err(e) => Err(Self::io("reading the ACL of", target)(e)),
        }
    }

    /// Gives `target` the access `want`, as far as the user we act as may: ACL and permission
    /// first (its owner may set them), owner and group last (changing the owner takes an HDFS
    /// superuser; afterwards we may no longer be the owner). Returns what could not be set.
    pub async fn copy_access(&self, target: &Location, want: &Access) -> Vec<NotKept> {
        let now = match self.access(target).await {
            Ok(Some(now)) => now,
            Ok(None) => return vec![],
            Err(error) => {
                return vec![NotKept {
                    target: target.clone(),
                    what: "ACL",
                    error,
                }]
            }
        };
        let client = match self.client(target) {
            Ok(c) => c,
            Err(error) => {
                return vec![NotKept {
                    target: target.clone(),
                    what: "ACL",
                    error,
                }]
            }
        };
        let mut failed = Vec::new();
        let same_acl = same_acl(&now.acl, &want.acl);
        if !same_acl {
            // Replace rather than merge: entries the new path inherited from its parent's
            // default ACL, which the original lacks, must go.
            let replaced = async {
                if !now.acl.is_empty() {
                    client.remove_acl(&target.path).await?;
                }
                if !want.acl.is_empty() {
                    client
                        .modify_acl_entries(&target.path, want.acl.clone())
                        .await?;
                }
                Ok(())
            };
            if let Err(e) = replaced.await {
                failed.push(NotKept {
                    target: target.clone(),
                    what: "ACL",
                    error: Self::io("changing the ACL of", target)(e),
                });
            }
        }
        // A changed ACL recomputes the mask (the group bits): set the bits after it.
        if !same_acl || now.permission != want.permission {
            if let Err(error) = self.set_permission(target, want.permission).await {
                failed.push(NotKept {
                    target: target.clone(),
                    what: "permission",
                    error,
                });
            }
        }
        for (what, differs, owner, group) in [
            (
                "owner",
                now.owner != want.owner,
                Some(want.owner.as_str()),
                None,
            ),
            (
                "group",
                now.group != want.group,
                None,
                Some(want.group.as_str()),
            ),
        ] {
            if differs {
                if let Err(error) = self.set_owner(target, owner, group).await {
                    failed.push(NotKept {
                        target: target.clone(),
                        what,
                        error,
                    });
                }
            }
        }
        failed
    }
}
