// Examples for go.yaml, checked by `semgrep --test`: each `ruleid:` line must be
// flagged on the next line, each `ok:` line must not.
package examples

import (
	"crypto/md5"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/bcrypt"
)

func findUser(db *sql.DB, name string, column string) error {
	// ruleid: go.sql-built-from-strings
	rows, err := db.Query(fmt.Sprintf("SELECT * FROM users WHERE name = '%s'", name))
	if err != nil {
		return err
	}
	defer rows.Close()
	// ruleid: go.sql-built-from-strings
	_, err = db.Exec("DELETE FROM users WHERE name = '" + name + "'")
	if err != nil {
		return err
	}
	query := "SELECT * FROM users ORDER BY " + column
	// ruleid: go.sql-built-from-strings
	other, err := db.Query(query)
	if err != nil {
		return err
	}
	defer other.Close()
	// ok: go.sql-built-from-strings
	safe, err := db.Query("SELECT * FROM users WHERE name = $1", name)
	if err != nil {
		return err
	}
	return safe.Close()
}

func archive(dir string) error {
	// ruleid: go.shell-command-built-from-input
	if err := exec.Command("sh", "-c", "tar czf /tmp/a.tgz "+dir).Run(); err != nil {
		return err
	}
	// ok: go.shell-command-built-from-input
	return exec.Command("tar", "czf", "/tmp/a.tgz", dir).Run()
}

func readUpload(name string) ([]byte, error) {
	path := filepath.Join("/srv/uploads", name)
	// ruleid: go.path-traversal-into-file-api
	return os.ReadFile(path)
}

func readUploadChecked(name string) ([]byte, error) {
	if !filepath.IsLocal(name) {
		return nil, fmt.Errorf("%q leaves the upload directory", name)
	}
	// ok: go.path-traversal-into-file-api
	return os.ReadFile(filepath.Join("/srv/uploads", name))
}

func storePassword(password string) ([]byte, error) {
	// ruleid: go.weak-password-hash
	weak := md5.Sum([]byte(password))
	_ = weak
	// ok: go.weak-password-hash
	return bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
}

func clients() (*http.Client, *http.Client) {
	insecure := &http.Client{Transport: &http.Transport{
		// ruleid: go.tls-verification-disabled
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	secure := &http.Client{Transport: &http.Transport{
		// ok: go.tls-verification-disabled
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12},
	}}
	return insecure, secure
}

func port(text string) (int, error) {
	// ruleid: go.unchecked-error-discarded
	fallback, _ := strconv.Atoi(os.Getenv("PORT"))
	// ok: go.unchecked-error-discarded
	value, err := strconv.Atoi(text)
	if err != nil {
		return fallback, err
	}
	return value, nil
}

func save(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// ruleid: go.deferred-close-of-written-file
	defer f.Close()
	_, err = f.Write(data)
	return err
}

func saveChecked(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// ok: go.deferred-close-of-written-file
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Close()
}
