package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
)

// The env store's key file on the cluster (ADR 0051). Every replica is
// given the same file (--secret-key-file); nothing makes one implicitly —
// two replicas each making their own would lock each other out — so the
// operator runs `env key-init` once and copies the file.

type envKeyArgs struct {
	out     string // env key-init
	newFile string // env rotate-key
}

// keyFileError names the file in every error about it.
func keyFileError(path, reason string, err error) error {
	msg := "env key file " + path + ": " + reason
	if err != nil {
		msg += ": " + err.Error()
	}
	return errs.E(errs.Invalid, "secret-key-file", "%s", msg)
}

// loadKeyFile reads a KEK: a regular file (not a symlink), 0600 or
// stricter, in the key format (envseal.KeyFileProblem).
func loadKeyFile(path string) (envseal.KEK, error) {
	if !filepath.IsAbs(path) {
		return envseal.KEK{}, keyFileError(path, "must be an absolute path", nil)
	}
	lst, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return envseal.KEK{}, keyFileError(path, "does not exist (make one with `ql3-control env key-init --out FILE` and give it to every replica)", nil)
	}
	if err != nil {
		return envseal.KEK{}, keyFileError(path, "cannot be read", err)
	}
	if problem := envseal.KeyFileProblem(lst.Mode().IsRegular(), uint32(lst.Mode().Perm()), lst.Size()); problem != "" {
		return envseal.KEK{}, keyFileError(path, problem, nil)
	}
	f, err := os.Open(path)
	if err != nil {
		return envseal.KEK{}, keyFileError(path, "cannot be opened", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(st, lst) {
		return envseal.KEK{}, keyFileError(path, "changed while it was opened", err)
	}
	raw, err := io.ReadAll(io.LimitReader(f, envseal.MaxKeyFileBytes+1))
	if err != nil || len(raw) > envseal.MaxKeyFileBytes {
		return envseal.KEK{}, keyFileError(path, "cannot be read as a key file", err)
	}
	k, err := envseal.ParseKEK(string(raw))
	if err != nil {
		return envseal.KEK{}, keyFileError(path, "is not usable", err)
	}
	return k, nil
}

// createKeyFile writes a fresh KEK to path (which must not exist), 0600.
func createKeyFile(path string) (envseal.KEK, error) {
	if !filepath.IsAbs(path) {
		return envseal.KEK{}, keyFileError(path, "must be an absolute path", nil)
	}
	k, err := envseal.NewKEK()
	if err != nil {
		return envseal.KEK{}, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return envseal.KEK{}, keyFileError(path, "cannot be created", err)
	}
	_, err = f.WriteString(k.Text() + "\n")
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(path)
		return envseal.KEK{}, keyFileError(path, "cannot be written", err)
	}
	return k, nil
}

// openEnvStore opens the env store for serve: unlocked with the key file
// when one is configured; locked (every env route 503 naming the flag)
// when none is and the store has no key yet; refused when the store has a
// key and no file is given.
func (m *Main) openEnvStore(ctx context.Context, pool *pgxpool.Pool) (*envstore.Store, error) {
	store := envstore.New(pool)
	path := m.Config.SecretKeyFile
	if path == "" {
		has, err := store.HasEnvKey(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the env store's key: %w", err)
		}
		if has {
			return nil, errs.E(errs.Invalid, "secret-key-file", "the env store holds encrypted values: start ql3-control with --secret-key-file naming the key file every replica shares")
		}
		m.log.Info("env store locked: no --secret-key-file (env entries cannot be created; tasks run without them)")
		return store, nil
	}
	kek, err := loadKeyFile(path)
	if err != nil {
		return nil, err
	}
	if err := store.UnlockEnv(ctx, kek, path); err != nil {
		return nil, err
	}
	m.log.Info("env store unlocked", "keyId", kek.ID())
	return store, nil
}

// envOpener is the dispatcher's view of the data key: nil while locked.
func envOpener(store *envstore.Store) controlplane.EnvOpener {
	if store == nil {
		return nil
	}
	c, err := store.Cipher()
	if err != nil {
		return nil
	}
	return c
}

func envKeyCommands() map[string]command {
	return map[string]command{
		"env key-init": {
			summary: "write a new env key file (0600) to give every replica as --secret-key-file",
			flags: func(fs *flag.FlagSet, a *cmdArgs) {
				fs.StringVar(&a.envKey.out, "out", "", "absolute path of the new key file (must not exist)")
			},
			run: (*Main).envKeyInit,
		},
		"env rotate-key": {
			summary: "wrap the env data key under a new key file too (both open it until env retire-keys)",
			scope:   forDatabase,
			flags: func(fs *flag.FlagSet, a *cmdArgs) {
				fs.StringVar(&a.envKey.newFile, "new-key-file", "", "absolute path of the new key file to create (must not exist)")
			},
			run: (*Main).envRotateKey,
		},
		"env retire-keys": {
			summary: "remove every wrapping of the env data key but --secret-key-file's (after every replica uses it)",
			scope:   forDatabase,
			run:     (*Main).envRetireKeys,
		},
	}
}

func (m *Main) envKeyInit(_ context.Context) error {
	if m.args.envKey.out == "" {
		return errs.Invalidf("out", "required")
	}
	k, err := createKeyFile(m.args.envKey.out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "wrote env key %s to %s; give every replica this file as --secret-key-file and back it up apart from the database\n", k.ID(), m.args.envKey.out)
	return err
}

// unlockedStore opens the store with --secret-key-file for a key command.
func (m *Main) unlockedStore(ctx context.Context) (*envstore.Store, envseal.KEK, error) {
	if m.Config.SecretKeyFile == "" {
		return nil, envseal.KEK{}, errs.Invalidf("secret-key-file", "required: the key file the replicas use now")
	}
	kek, err := loadKeyFile(m.Config.SecretKeyFile)
	if err != nil {
		return nil, kek, err
	}
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return nil, kek, err
	}
	store := envstore.New(pool)
	return store, kek, store.UnlockEnv(ctx, kek, m.Config.SecretKeyFile)
}

// envRotateKey: step 1 of a rotation without downtime. The running
// replicas hold the data key and keep serving; a replica (re)started with
// either file opens the store until env retire-keys.
func (m *Main) envRotateKey(ctx context.Context) error {
	if m.args.envKey.newFile == "" {
		return errs.Invalidf("new-key-file", "required")
	}
	store, _, err := m.unlockedStore(ctx)
	if err != nil {
		return err
	}
	next, err := createKeyFile(m.args.envKey.newFile)
	if err != nil {
		return err
	}
	if err := store.AddEnvKey(cliActor(ctx), next); err != nil {
		os.Remove(m.args.envKey.newFile)
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "env key %s wraps the data key too (%s); give every replica this file as --secret-key-file, then run `ql3-control env retire-keys --secret-key-file %s`\n",
		next.ID(), m.args.envKey.newFile, m.args.envKey.newFile)
	return err
}

// envRetireKeys: step 2, once every replica runs with the new file.
func (m *Main) envRetireKeys(ctx context.Context) error {
	store, kek, err := m.unlockedStore(ctx)
	if err != nil {
		return err
	}
	n, err := store.RetireEnvKeys(cliActor(ctx), kek)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "retired %d old env key(s); only %s (%s) opens the env store now\n", n, kek.ID(), m.Config.SecretKeyFile)
	return err
}
