# Examples for python.yaml, checked by `semgrep --test`: each `ruleid:` line must
# be flagged on the next line, each `ok:` line must not.
import hashlib
import os
import pickle
import shlex
import ssl
import subprocess

import requests
import yaml


def find_user(cursor, name):
    # ruleid: python.sql-built-from-strings
    cursor.execute(f"SELECT * FROM users WHERE name = '{name}'")
    # ruleid: python.sql-built-from-strings
    cursor.execute("SELECT * FROM users WHERE name = '%s'" % name)
    # ruleid: python.sql-built-from-strings
    cursor.execute("DELETE FROM users WHERE id = " + str(name))
    # ruleid: python.sql-built-from-strings
    cursor.execute("SELECT * FROM t WHERE a = {}".format(name))
    # ok: python.sql-built-from-strings
    cursor.execute("SELECT * FROM users WHERE name = %s", (name,))
    # ok: python.sql-built-from-strings
    cursor.execute("SELECT * FROM users WHERE " + "name = ?", (name,))


def orders(db, customer, column):
    # ruleid: python.sql-query-variable-built-from-strings
    query = f"SELECT * FROM orders WHERE customer = '{customer}' ORDER BY {column}"
    db.execute(query)
    # ok: python.sql-query-variable-built-from-strings
    sql = "SELECT * FROM orders WHERE customer = ?"
    db.execute(sql, (customer,))


def archive(directory, user_host):
    # ruleid: python.shell-command-built-from-input
    subprocess.run(f"tar czf /tmp/a.tgz {directory}", shell=True, check=True)
    # ruleid: python.shell-command-built-from-input
    os.system("ping -c 1 " + user_host)
    # ok: python.shell-command-built-from-input
    subprocess.run(["tar", "czf", "/tmp/a.tgz", directory], check=True)
    # ok: python.shell-command-built-from-input
    subprocess.run("tar czf /tmp/a.tgz " + shlex.quote(directory), shell=True, check=True)
    # ok: python.shell-command-built-from-input
    subprocess.run("make clean", shell=True, check=True)


def read_upload(filename):
    path = os.path.join("/srv/uploads", filename)
    # ruleid: python.path-traversal-into-file-api
    with open(path, "rb") as f:
        return f.read()


def read_upload_checked(filename):
    base = os.path.realpath("/srv/uploads")
    path = os.path.realpath(os.path.join(base, filename))
    if os.path.commonpath([base, path]) != base:
        raise ValueError("outside the upload directory")
    # ok: python.path-traversal-into-file-api
    with open(path, "rb") as f:
        return f.read()


def load_session(blob, text):
    # ruleid: python.unsafe-deserialization
    state = pickle.loads(blob)
    # ruleid: python.unsafe-deserialization
    config = yaml.load(text)
    # ruleid: python.unsafe-deserialization
    other = yaml.load(text, Loader=yaml.Loader)
    # ok: python.unsafe-deserialization
    safe = yaml.safe_load(text)
    # ok: python.unsafe-deserialization
    also_safe = yaml.load(text, Loader=yaml.SafeLoader)
    return state, config, other, safe, also_safe


def calculate(expression, table):
    # ruleid: python.eval-of-a-value
    value = eval(expression)
    # ruleid: python.eval-of-a-value
    exec(table["hook"])
    # ok: python.eval-of-a-value
    constant = eval("1 + 2")
    return value, constant


def store_password(password, salt):
    # ruleid: python.weak-password-hash
    digest = hashlib.md5(password.encode()).hexdigest()
    # ruleid: python.weak-password-hash
    other = hashlib.sha256(password.encode("utf-8")).hexdigest()
    # ok: python.weak-password-hash
    strong = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)
    # ok: python.weak-password-hash
    checksum = hashlib.sha256(salt).hexdigest()
    return digest, other, strong, checksum


def fetch(url):
    # ruleid: python.tls-verification-disabled
    insecure = requests.get(url, verify=False, timeout=10)
    # ruleid: python.tls-verification-disabled
    context = ssl._create_unverified_context()
    # ok: python.tls-verification-disabled
    secure = requests.get(url, verify=True, timeout=10)
    # ok: python.tls-verification-disabled
    default = ssl.create_default_context()
    return insecure, context, secure, default


def deploy(target):
    # ruleid: python.subprocess-result-ignored
    subprocess.run(["rsync", "-a", "build/", target])
    # ok: python.subprocess-result-ignored
    subprocess.run(["rsync", "-a", "build/", target], check=True)
    # ok: python.subprocess-result-ignored
    result = subprocess.run(["rsync", "-a", "build/", target])
    return result.returncode
