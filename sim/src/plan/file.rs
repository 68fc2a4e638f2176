//! A schedule file: a [`Plan`] as TOML (what `acp-chaos shrink` writes), with one table
//! allowed beside the plan's fields, `[expect]` (what a regression must show; the regression
//! corpus and `replay --schedule` read it, see [`super::expect`]). Any other field the format does not know
//! is refused, naming the file, its line and the field, and every number is checked against
//! [`crate::bounds`] ([`Plan::check`]).

use std::marker::PhantomData;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::Plan;

/// The one table a schedule file may hold beside the plan's fields.
pub const EXPECT: &str = "expect";

/// Read a schedule file: its plan, checked, and its `[expect]` table read as `T` (if present).
///
/// Errors: the file cannot be read (the message names the path), is not TOML of a plan or
/// has an unknown field (`FILE:LINE: message` naming the field), or [`Plan::check`] refuses a
/// value (`FILE: field `F`: reason`).
pub fn read<T: de::DeserializeOwned>(path: &Path) -> anyhow::Result<(Plan, Option<T>)> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    parse(path, &text)
}

/// [`read`] on a file's text (`path` names it in errors).
///
/// Errors: as [`read`], but for reading the file.
pub fn parse<T: de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> anyhow::Result<(Plan, Option<T>)> {
    let file: ScheduleFile<T> = toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
    if let Some(e) = file.plan.check() {
        anyhow::bail!("{}: field `{e}", path.display());
    }
    Ok((file.plan, file.expect))
}

/// A TOML error as `FILE:LINE: message` (or `FILE: message` when it has no place), with the
/// field assigned on that line when the message does not name one.
pub fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> anyhow::Error {
    let message = e.message().trim_end();
    match e.span() {
        Some(s) => {
            let line = text.as_bytes()[..s.start.min(text.len())]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
                + 1;
            let message = crate::scenario::in_entry(message.to_string(), text, "faults");
            let field = crate::scenario::key_at(text, line)
                .filter(|k| !message.contains(&format!("`{k}`")) && !message.starts_with("field `"))
                .map(|k| format!(" (field `{k}`)"))
                .unwrap_or_default();
            anyhow::anyhow!("{}:{line}: {message}{field}", path.display())
        }
        None => anyhow::anyhow!("{}: {message}", path.display()),
    }
}

/// The plan and the `[expect]` table, read in one pass so that an unknown field's error keeps
/// its place in the file.
struct ScheduleFile<T> {
    plan: Plan,
    expect: Option<T>,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ScheduleFile<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FileVisitor(PhantomData))
    }
}

struct FileVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for FileVisitor<T> {
    type Value = ScheduleFile<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a schedule file: a plan's fields and an optional [expect] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut expect = None;
        let plan = Plan::deserialize(de::value::MapAccessDeserializer::new(WithoutExpect {
            map,
            expect: &mut expect,
        }))?;
        Ok(ScheduleFile { plan, expect })
    }
}

/// The file's top-level table as the plan sees it: every key but `expect`, which is read
/// aside as `T`.
struct WithoutExpect<'a, A, T> {
    map: A,
    expect: &'a mut Option<T>,
}

impl<'de, A: MapAccess<'de>, T: Deserialize<'de>> MapAccess<'de> for WithoutExpect<'_, A, T> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let mut seed = Some(seed);
        loop {
            match self.map.next_key_seed(KeyOrExpect(&mut seed))? {
                None => return Ok(None),
                Some(Some(key)) => return Ok(Some(key)),
                Some(None) => *self.expect = Some(self.map.next_value()?),
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key of the file: `None` for `expect`, else the plan's own key seed applied to it (inside
/// the TOML deserializer, so an unknown field's error gets the key's line).
struct KeyOrExpect<'a, K>(&'a mut Option<K>);

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeyOrExpect<'_, K> {
    type Value = Option<K::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let key = String::deserialize(d)?;
        if key == EXPECT {
            return Ok(None);
        }
        let seed = self
            .0
            .take()
            .ok_or_else(|| de::Error::custom("a key read twice"))?;
        seed.deserialize(IntoDeserializer::<D::Error>::into_deserializer(key))
            .map(Some)
    }
}

/// A plan as the TOML of a schedule file. TOML integers are signed 64-bit, so a seed above
/// 2^63 - 1 is written as a string (`seed = "18446744073709551199"`), which [`seed_of`] reads
/// back; every other seed is the integer it always was.
pub fn to_toml(plan: &Plan) -> anyhow::Result<String> {
    if i64::try_from(plan.seed).is_ok() {
        return Ok(toml::to_string(plan)?);
    }
    let mut low = plan.clone();
    low.seed = 0;
    let text = toml::to_string(&low)?;
    let line = "\nseed = 0\n";
    anyhow::ensure!(
        text.contains(line),
        "a plan's TOML has no top-level seed line"
    );
    Ok(text.replacen(line, &format!("\nseed = \"{}\"\n", plan.seed), 1))
}

/// A plan's seed: an integer, or a string of decimal digits (a schedule file's form for seeds
/// above 2^63 - 1, [`to_toml`]).
pub fn seed_of<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct SeedVisitor;
    impl Visitor<'_> for SeedVisitor {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str(
                "a seed from 0 to 2^64 - 1 (an integer, or a string of digits above 2^63 - 1)",
            )
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
            Ok(n)
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
            u64::try_from(n).map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
        }
        fn visit_str<E: de::Error>(self, t: &str) -> Result<u64, E> {
            t.parse()
                .map_err(|_| E::invalid_value(de::Unexpected::Str(t), &self))
        }
    }
    d.deserialize_any(SeedVisitor)
}
