//! What a MariaDB or MySQL account may do beyond one database, read from its `SHOW GRANTS`:
//! a privilege on every database (`*.*`, other than `USAGE`), on another database (or on a
//! pattern of names), `PROXY`, and roles (whose own privileges are not read here). Each is
//! given as the server wrote it, without any password or hash it holds.

/// The grants of `grants` (`SHOW GRANTS` lines) that reach beyond `database`.
pub fn wide(grants: &[String], database: &str) -> Vec<String> {
    grants
        .iter()
        .filter_map(|g| reaches_beyond(g, database))
        .collect()
}

/// `g` without what follows `IDENTIFIED` (a password's hash) up to `WITH`, if anything.
fn shown(g: &str) -> String {
    let up = g.to_ascii_uppercase();
    match up.find(" IDENTIFIED ") {
        Some(i) => {
            let tail = up[i..].find(" WITH ").map(|j| &g[i + j..]).unwrap_or("");
            format!("{}{tail}", &g[..i])
        }
        None => g.to_string(),
    }
}

fn reaches_beyond(g: &str, database: &str) -> Option<String> {
    let up = g.to_ascii_uppercase();
    let body = up.strip_prefix("GRANT ")?;
    let Some(on) = body.find(" ON ") else {
        // `GRANT role TO user`: what the role may do is not read here.
        return Some(format!("{} (a role: its privileges count too)", shown(g)));
    };
    let privileges = body[..on].trim();
    if privileges == "USAGE" {
        return None;
    }
    if privileges.starts_with("PROXY") {
        return Some(shown(g));
    }
    let from = "GRANT ".len() + on + " ON ".len();
    let mut object = g[from..].trim_start();
    for kind in [
        "TABLE ",
        "FUNCTION ",
        "PROCEDURE ",
        "PACKAGE BODY ",
        "PACKAGE ",
    ] {
        if object.to_ascii_uppercase().starts_with(kind) {
            object = &object[kind.len()..];
        }
    }
    let db = database_part(object);
    // Wildcards count only in a grant on a whole database (`db`.*), which SHOW GRANTS
    // shows with `\_` for a plain `_`: a pattern is only ours when it names nothing but our
    // database. A table's or routine's database is its name as it stands.
    let whole = object.contains(".*");
    let ours = match db.as_deref() {
        Some(d) if whole => unescaped(d).is_some_and(|d| d == database),
        Some(d) => d == database || unescaped(d).is_some_and(|d| d == database),
        None => false,
    };
    (!ours).then(|| shown(g))
}

/// The database an `ON` object names (`` `db`.* ``, `db.t`, `*.*`): `None` for `*`.
fn database_part(object: &str) -> Option<String> {
    if let Some(rest) = object.strip_prefix('`') {
        let mut name = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '`' {
                if chars.peek() == Some(&'`') {
                    chars.next();
                    name.push('`');
                } else {
                    return Some(name);
                }
            } else {
                name.push(c);
            }
        }
        return Some(name);
    }
    let name = object.split(['.', ' ']).next().unwrap_or("");
    (name != "*").then(|| name.to_string())
}

/// A grant's database name with its `\_` and `\%` read as the characters; `None` when it
/// holds an unescaped wildcard (a pattern of many names).
fn unescaped(d: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = d.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '_' | '%' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(g: &[&str]) -> Vec<String> {
        g.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_what_reaches_past_the_database_is_wide() {
        let narrow = lines(&[
            "GRANT USAGE ON *.* TO `dbduel`@`%` IDENTIFIED BY PASSWORD '*ABC'",
            "GRANT ALL PRIVILEGES ON `dbduel\\_shootout`.* TO `dbduel`@`%`",
            "GRANT SELECT ON `dbduel\\_shootout`.`t` TO `dbduel`@`%`",
            "GRANT SELECT ON `dbduel_shootout`.`t` TO `dbduel`@`%`",
        ]);
        assert!(wide(&narrow, "dbduel_shootout").is_empty());
        let root = lines(&[
            "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` IDENTIFIED VIA mysql_native_password USING '*81F5E21E35407D884A6CD4A731AEBFB6AF209E1B' WITH GRANT OPTION",
            "GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION",
        ]);
        let w = wide(&root, "dbduel_shootout");
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("GRANT ALL PRIVILEGES ON *.*") && w[0].ends_with("WITH GRANT OPTION"),
            "{w:?}"
        );
        assert!(!w[0].contains("81F5E21E"), "no hash shown: {w:?}");
        for (g, why) in [
            ("GRANT SELECT ON `prod`.* TO `b`@`%`", "another database"),
            ("GRANT ALL ON `dbduel%`.* TO `b`@`%`", "a pattern"),
            (
                "GRANT ALL ON `dbduel_shootout`.* TO `b`@`%`",
                "`_` unescaped is a wildcard",
            ),
            ("GRANT `admin` TO `b`@`%`", "a role"),
            (
                "GRANT EXECUTE ON PROCEDURE `mysql`.`p` TO `b`@`%`",
                "a routine elsewhere",
            ),
        ] {
            assert_eq!(wide(&lines(&[g]), "dbduel_shootout").len(), 1, "{why}: {g}");
        }
    }
}
