// Examples for rust.yaml, checked by `semgrep --test`: each `ruleid:` line must be
// flagged on the next line, each `ok:` line must not.
use std::fs::{self, File};
use std::io::Write;
use std::path::{Component, Path};
use std::process::Command;

use sha2::{Digest, Sha256};

async fn find_user(pool: &PgPool, name: &str) -> Result<Vec<User>, sqlx::Error> {
    // ruleid: rust.sql-built-from-strings
    let rows = sqlx::query(&format!("SELECT * FROM users WHERE name = '{name}'")).fetch_all(pool).await?;
    let sql = format!("DELETE FROM users WHERE name = '{}'", name);
    // ruleid: rust.sql-built-from-strings
    conn.execute(&sql, [])?;
    // ok: rust.sql-built-from-strings
    let safe = sqlx::query("SELECT * FROM users WHERE name = $1").bind(name).fetch_all(pool).await?;
    // ok: rust.sql-built-from-strings
    let label = make_label(&format!("user {name}"));
    Ok(rows)
}

fn archive(dir: &str) -> std::io::Result<()> {
    // ruleid: rust.shell-command-built-from-input
    Command::new("sh").arg("-c").arg(format!("tar czf /tmp/a.tgz {dir}")).status()?;
    // ok: rust.shell-command-built-from-input
    Command::new("tar").arg("czf").arg("/tmp/a.tgz").arg(dir).status()?;
    Ok(())
}

fn read_upload(base: &Path, name: &str) -> std::io::Result<String> {
    let path = base.join(name);
    // ruleid: rust.path-traversal-into-file-api
    fs::read_to_string(path)
}

fn read_upload_checked(base: &Path, name: &str) -> std::io::Result<String> {
    if !Path::new(name).components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(std::io::Error::other("the name leaves the upload directory"));
    }
    // ok: rust.path-traversal-into-file-api
    fs::read_to_string(base.join(name))
}

fn store_password(password: &str) -> String {
    // ruleid: rust.weak-password-hash
    let digest = Sha256::digest(password.as_bytes());
    // ok: rust.weak-password-hash
    let checksum = Sha256::digest(contents);
    format!("{digest:x}{checksum:x}")
}

fn clients() -> reqwest::Result<(reqwest::Client, reqwest::Client)> {
    // ruleid: rust.tls-verification-disabled
    let insecure = reqwest::Client::builder().danger_accept_invalid_certs(true).build()?;
    // ok: rust.tls-verification-disabled
    let secure = reqwest::Client::builder().https_only(true).build()?;
    Ok((insecure, secure))
}

fn save(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    // ruleid: rust.result-discarded
    let _ = file.write_all(data);
    // ok: rust.result-discarded
    file.flush()?;
    Ok(())
}
