//! The `Database` table of the `_Server` database, which tells whether a server
//! of a clustered database is connected to the cluster, is the leader, and how
//! far its log has come (`index`).

use serde::Deserialize;
use uuid::Uuid;

use crate::datum::Datum;
use crate::wire::{
    apply_optional_diff, at_most_one, optional_datum, scalar_datum, Row, RowError, WireAtom,
    WireSet,
};

/// A row of `_Server.Database` (the columns the client monitors).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerDatabase {
    pub name: String,
    /// `standalone`, `clustered` or `relay`.
    pub model: String,
    pub connected: bool,
    pub leader: bool,
    pub cid: Option<Uuid>,
    pub index: Option<i64>,
    /// The database schema as the server has it (JSON text).
    pub schema: Option<String>,
}

#[doc(hidden)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDatabaseUpdate {
    #[serde(default)]
    name: Option<WireAtom<String>>,
    #[serde(default)]
    model: Option<WireAtom<String>>,
    #[serde(default)]
    connected: Option<WireAtom<bool>>,
    #[serde(default)]
    leader: Option<WireAtom<bool>>,
    #[serde(default)]
    cid: Option<WireSet<Uuid>>,
    #[serde(default)]
    index: Option<WireSet<i64>>,
    #[serde(default)]
    schema: Option<WireSet<String>>,
}

impl Row for ServerDatabase {
    const TABLE: &'static str = "Database";
    const COLUMNS: &'static [&'static str] = &[
        "name",
        "model",
        "connected",
        "leader",
        "cid",
        "index",
        "schema",
    ];
    type Update = ServerDatabaseUpdate;

    fn apply_new(&mut self, u: Self::Update) -> Result<(), RowError> {
        if let Some(v) = u.name {
            self.name = v.0;
        }
        if let Some(v) = u.model {
            self.model = v.0;
        }
        if let Some(v) = u.connected {
            self.connected = v.0;
        }
        if let Some(v) = u.leader {
            self.leader = v.0;
        }
        if let Some(v) = u.cid {
            self.cid = at_most_one(v.0, "cid")?;
        }
        if let Some(v) = u.index {
            self.index = at_most_one(v.0, "index")?;
        }
        if let Some(v) = u.schema {
            self.schema = at_most_one(v.0, "schema")?;
        }
        Ok(())
    }

    fn apply_diff(&mut self, u: Self::Update) -> Result<(), RowError> {
        let ServerDatabaseUpdate {
            name,
            model,
            connected,
            leader,
            cid,
            index,
            schema,
        } = u;
        self.apply_new(ServerDatabaseUpdate {
            name,
            model,
            connected,
            leader,
            cid: None,
            index: None,
            schema: None,
        })?;
        if let Some(v) = cid {
            apply_optional_diff(&mut self.cid, v.0, "cid")?;
        }
        if let Some(v) = index {
            apply_optional_diff(&mut self.index, v.0, "index")?;
        }
        if let Some(v) = schema {
            apply_optional_diff(&mut self.schema, v.0, "schema")?;
        }
        Ok(())
    }

    fn column(&self, name: &str) -> Option<Datum> {
        self.to_datums()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| d)
    }

    fn to_datums(&self) -> Vec<(&'static str, Datum)> {
        vec![
            ("name", scalar_datum(&self.name)),
            ("model", scalar_datum(&self.model)),
            ("connected", scalar_datum(&self.connected)),
            ("leader", scalar_datum(&self.leader)),
            ("cid", optional_datum(&self.cid)),
            ("index", optional_datum(&self.index)),
            ("schema", optional_datum(&self.schema)),
        ]
    }
}

/// Why a server is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsuitable {
    /// The server does not serve the database.
    NoDatabase,
    /// A cluster member that is not connected to the cluster.
    NotConnected,
    /// Leader-only was asked and this member is a follower.
    NotLeader,
    /// Its log index is lower than one already seen: it has stale data.
    Stale { index: i64, seen: i64 },
    /// It belongs to another cluster than the one seen before.
    OtherCluster { cid: Uuid, seen: Uuid },
}

impl std::fmt::Display for Unsuitable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsuitable::NoDatabase => f.write_str("database not served"),
            Unsuitable::NotConnected => f.write_str("not connected to the cluster"),
            Unsuitable::NotLeader => f.write_str("not the cluster leader"),
            Unsuitable::Stale { index, seen } => {
                write!(f, "stale (index {index} < {seen} already seen)")
            }
            Unsuitable::OtherCluster { cid, seen } => {
                write!(f, "cluster id {cid} differs from {seen} seen before")
            }
        }
    }
}

/// What the client remembers about the cluster across connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterMemory {
    /// Highest log index seen.
    pub max_index: Option<i64>,
    /// The cluster id seen first.
    pub cid: Option<Uuid>,
}

impl ClusterMemory {
    /// Forgets everything (`sb-cluster-state-reset`), for a rebuilt cluster.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Decides whether the server whose `_Server.Database` row is `row` may be
    /// used, and remembers its index and cluster id.
    pub fn check(
        &mut self,
        row: Option<&ServerDatabase>,
        leader_only: bool,
    ) -> Result<(), Unsuitable> {
        let Some(row) = row else {
            return Err(Unsuitable::NoDatabase);
        };
        if row.model != "clustered" {
            return Ok(());
        }
        if !row.connected {
            return Err(Unsuitable::NotConnected);
        }
        if leader_only && !row.leader {
            return Err(Unsuitable::NotLeader);
        }
        if let (Some(seen), Some(cid)) = (self.cid, row.cid) {
            if seen != cid {
                return Err(Unsuitable::OtherCluster { cid, seen });
            }
        }
        if let (Some(seen), Some(index)) = (self.max_index, row.index) {
            if index < seen {
                return Err(Unsuitable::Stale { index, seen });
            }
        }
        if row.index.is_some() {
            self.max_index = row.index;
        }
        if row.cid.is_some() {
            self.cid = row.cid;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clustered(connected: bool, leader: bool, index: i64) -> ServerDatabase {
        ServerDatabase {
            name: "OVN_Southbound".into(),
            model: "clustered".into(),
            connected,
            leader,
            cid: Some(Uuid::from_u128(1)),
            index: Some(index),
            schema: None,
        }
    }

    #[test]
    fn server_checks() {
        let mut m = ClusterMemory::default();
        assert_eq!(m.check(None, false), Err(Unsuitable::NoDatabase));
        let standalone = ServerDatabase {
            model: "standalone".into(),
            ..ServerDatabase::default()
        };
        assert_eq!(m.check(Some(&standalone), true), Ok(()));
        assert_eq!(
            m.check(Some(&clustered(false, true, 5)), false),
            Err(Unsuitable::NotConnected)
        );
        assert_eq!(
            m.check(Some(&clustered(true, false, 5)), true),
            Err(Unsuitable::NotLeader)
        );
        assert_eq!(m.check(Some(&clustered(true, false, 7)), false), Ok(()));
        assert_eq!(m.max_index, Some(7));
        assert_eq!(
            m.check(Some(&clustered(true, true, 6)), false),
            Err(Unsuitable::Stale { index: 6, seen: 7 })
        );
        assert_eq!(m.check(Some(&clustered(true, true, 9)), true), Ok(()));
        assert_eq!(m.max_index, Some(9));
        // Another cluster is refused until the memory is reset.
        let mut other = clustered(true, true, 1);
        other.cid = Some(Uuid::from_u128(2));
        assert!(matches!(
            m.check(Some(&other), false),
            Err(Unsuitable::OtherCluster { .. })
        ));
        m.reset();
        assert_eq!(m.check(Some(&other), false), Ok(()));
        assert_eq!(m.cid, Some(Uuid::from_u128(2)));
    }

    #[test]
    fn index_diff_is_the_new_value() {
        let mut row = clustered(true, true, 5);
        let u: ServerDatabaseUpdate =
            serde_json::from_str(r#"{"index":6,"leader":false}"#).unwrap();
        row.apply_diff(u).unwrap();
        assert_eq!(row.index, Some(6));
        assert!(!row.leader);
    }
}
