// Examples for javascript.yaml, checked by `semgrep --test`: each `ruleid:` line
// must be flagged on the next line, each `ok:` line must not.
const childProcess = require("child_process");
const crypto = require("crypto");
const fs = require("fs");
const https = require("https");
const path = require("path");
const serialize = require("node-serialize");
const vm = require("vm");

async function findUser(db, name) {
  // ruleid: javascript.sql-built-from-strings
  await db.query(`SELECT * FROM users WHERE name = '${name}'`);
  // ruleid: javascript.sql-built-from-strings
  await db.query("DELETE FROM users WHERE id = " + name);
  const sql = `SELECT * FROM orders WHERE customer = '${name}'`;
  // ruleid: javascript.sql-built-from-strings
  await db.all(sql);
  // ok: javascript.sql-built-from-strings
  await db.query("SELECT * FROM users WHERE name = $1", [name]);
  // ok: javascript.sql-built-from-strings
  return cache.get(`user:${name}`);
}

function archive(dir, callback) {
  // ruleid: javascript.shell-command-built-from-input
  childProcess.exec(`tar czf /tmp/a.tgz ${dir}`, callback);
  // ok: javascript.shell-command-built-from-input
  childProcess.execFile("tar", ["czf", "/tmp/a.tgz", dir], callback);
  // ok: javascript.shell-command-built-from-input
  childProcess.exec("make clean", callback);
}

function download(req, res) {
  const file = path.join(__dirname, "uploads", req.params.name);
  // ruleid: javascript.path-traversal-into-file-api
  res.sendFile(file);
}

function downloadChecked(req, res) {
  const root = path.resolve(__dirname, "uploads");
  const file = path.resolve(root, req.params.name);
  if (!file.startsWith(root + path.sep)) {
    return res.status(400).end();
  }
  // ok: javascript.path-traversal-into-file-api
  res.sendFile(file);
}

function restore(cookie) {
  // ruleid: javascript.unsafe-deserialization
  const session = serialize.unserialize(cookie);
  // ok: javascript.unsafe-deserialization
  const data = JSON.parse(cookie);
  return [session, data];
}

function calculate(expression) {
  // ruleid: javascript.eval-of-a-value
  const value = eval(expression);
  // ruleid: javascript.eval-of-a-value
  const other = vm.runInNewContext(expression, {});
  // ok: javascript.eval-of-a-value
  const constant = eval("1 + 2");
  // ok: javascript.eval-of-a-value
  setTimeout(() => console.log(value), 10);
  return [value, other, constant];
}

function storePassword(password) {
  // ruleid: javascript.weak-password-hash
  const weak = crypto.createHash("md5").update(password).digest("hex");
  // ok: javascript.weak-password-hash
  const checksum = crypto.createHash("sha256").update(fileContents).digest("hex");
  return [weak, checksum];
}

function agents() {
  // ruleid: javascript.tls-verification-disabled
  const insecure = new https.Agent({ rejectUnauthorized: false });
  // ok: javascript.tls-verification-disabled
  const secure = new https.Agent({ keepAlive: true });
  return [insecure, secure];
}

function readConfig(file, done) {
  // ruleid: javascript.callback-error-ignored
  fs.readFile(file, "utf8", (err, text) => {
    done(JSON.parse(text));
  });
  // ok: javascript.callback-error-ignored
  fs.readFile(file, "utf8", (err, text) => {
    if (err) return done(null);
    done(JSON.parse(text));
  });
}

function refresh(client) {
  // ruleid: javascript.promise-error-swallowed
  client.refresh().catch(() => {});
  // ok: javascript.promise-error-swallowed
  client.refresh().catch((error) => console.error("refresh failed", error));
}

module.exports = { findUser, archive, download, downloadChecked, restore, calculate, storePassword, agents, readConfig, refresh };
