//! Study templates a user starts from: `custom` — a study of the user's own schema, data and
//! transactions (`sql`, `load` with `files`, `script`, `queries` steps) with the files it
//! names. `dbduel studies show custom` prints its study; `dbduel init DIR` writes it all.
//! Unlike the built-in studies a template is not run by name: its steps read files that
//! live beside it.

/// A template: its name, and its files (path relative to the study's directory, text); the
/// first file is the study.
pub struct Template {
    pub name: &'static str,
    pub files: &'static [(&'static str, &'static str)],
}

/// The study a user's own workload starts from.
pub const CUSTOM: Template = Template {
    name: "custom",
    files: &[
        (
            "study.toml",
            include_str!("../../studies/custom/study.toml"),
        ),
        (
            "schema.sql",
            include_str!("../../studies/custom/schema.sql"),
        ),
        (
            "schema.mysql.sql",
            include_str!("../../studies/custom/schema.mysql.sql"),
        ),
        (
            "schema.postgres.sql",
            include_str!("../../studies/custom/schema.postgres.sql"),
        ),
        (
            "data/accounts.csv",
            include_str!("../../studies/custom/data/accounts.csv"),
        ),
        (
            "scripts/transfer.sql",
            include_str!("../../studies/custom/scripts/transfer.sql"),
        ),
        (
            "scripts/balance.sql",
            include_str!("../../studies/custom/scripts/balance.sql"),
        ),
    ],
};

/// Every template.
pub const TEMPLATES: &[Template] = &[CUSTOM];

/// The template named `name`.
pub fn get(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name == name)
}

impl Template {
    /// The study file's text.
    pub fn study(&self) -> &'static str {
        self.files.first().map_or("", |(_, t)| *t)
    }

    /// The study's text with one more contender on someone else's server: `target` (a
    /// `mysql://` or `postgres://` URL), its password from the environment variable
    /// `password_env`; it joins the contenders run by default. `None` for a URL of another
    /// scheme.
    pub fn study_with_target(&self, target: &str, password_env: &str) -> Option<String> {
        let scheme = target.split_once("://")?.0;
        // A document engine's template would need its own steps: SQL servers only.
        let engine = crate::engines::engine_for_scheme(scheme)
            .filter(|e| !crate::engines::sql_variants(e).is_empty())?;
        let contender = format!(
            "[[contender]]\nname = \"target\"\nengine = \"{engine}\"          # your server: dbduel works only in a database of its own there\ntarget = {}\npassword_env = \"{password_env}\"\n\n",
            toml::Value::String(target.to_string())
        );
        let study = self.study();
        let at = study.find("[[contender]]")?;
        let text = format!("{}{contender}{}", &study[..at], &study[at..]);
        Some(text.replacen(
            "default_contenders = [\"sqlite\"]",
            "default_contenders = [\"sqlite\", \"target\"]",
            1,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_joins_the_default_contenders_with_its_engine() {
        let s = CUSTOM
            .study_with_target("postgres://me@db:5432/x", "PGPASS")
            .expect("postgres");
        assert!(
            s.contains("engine = \"postgres\"          # your server"),
            "{s}"
        );
        assert!(s.contains("target = \"postgres://me@db:5432/x\""), "{s}");
        assert!(
            s.contains("default_contenders = [\"sqlite\", \"target\"]"),
            "{s}"
        );
        assert!(CUSTOM.study_with_target("http://x", "P").is_none());
    }
}
