package qlopen

import (
	"errors"
	"io"
	"path"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// QingLong's /open/scripts (ADR 0057): the shapes and rules both binaries
// map onto their scripts folder (the edge's directory, the cluster's
// PostgreSQL store). The routes and bodies are QingLong v2.21.0's
// back/api/script.ts as its own panel calls them (src/pages/script/
// index.tsx, editNameModal.tsx, renameModal.tsx).

// File is QingLong's IFile (back/config/util.ts): key is the path from
// the folder's root, parent the folder's path, createTime epoch ms (ql3
// reports the modification time: the birth time is not portable).
type File struct {
	Title      string `json:"title"`
	Key        string `json:"key"`
	Type       string `json:"type"` // directory or file
	Parent     string `json:"parent"`
	CreateTime int64  `json:"createTime"`
	Size       *int64 `json:"size,omitempty"`
	Children   []File `json:"children,omitempty"`
}

// ScriptEntry is one element of a folder listing, as either store has it.
type ScriptEntry struct {
	Name    string
	Dir     bool
	Size    int64
	MtimeMs int64
}

// scriptSkip is QingLong's blacklist of the scripts tree.
var scriptSkip = map[string]bool{"node_modules": true, ".git": true, ".pnpm": true,
	"pnpm-lock.yaml": true, "yarn.lock": true, "package-lock.json": true}

// ScriptMaxBody bounds a script write through the Open API.
const ScriptMaxBody = 16 << 20

// ScriptRunRefused is the answer to PUT /open/scripts/run and /stop.
const ScriptRunRefused = "ql3 runs scripts only as tasks: create a cron with command `task <file>` (POST /open/crons) and run it (PUT /open/crons/run)"

// ScriptWrite is the body of POST /open/scripts (JSON or multipart).
type ScriptWrite struct {
	Filename       string  `json:"filename"`
	Path           string  `json:"path"`
	Content        *string `json:"content"`
	OriginFilename string  `json:"originFilename"`
	Directory      string  `json:"directory"`
	File           string  `json:"file"`
}

// ScriptSave is the body of PUT /open/scripts.
type ScriptSave struct {
	Filename string  `json:"filename"`
	Path     string  `json:"path"`
	Content  *string `json:"content"`
}

// ScriptRef is the body of DELETE, PUT rename and POST download.
type ScriptRef struct {
	Filename    string `json:"filename"`
	Path        string `json:"path"`
	Type        string `json:"type,omitempty"`
	NewFilename string `json:"newFilename,omitempty"`
}

// ScriptPath joins QingLong's (path, filename) into a folder path.
// QingLong accepts an absolute path inside its scripts folder; ql3's
// paths are relative to the folder, so a leading slash is refused by the
// folder's own check, as is "..".
func ScriptPath(dir, name string) (string, error) {
	if name == "" {
		return "", errs.Invalidf("filename", "is required")
	}
	if dir == "" {
		return name, nil
	}
	return strings.TrimSuffix(dir, "/") + "/" + name, nil
}

// ScriptTree lists dir as QingLong's readDirs (deep, children filled) or
// readDir (one level, folders with empty children) does, in the order
// list answers, leaving QingLong's blacklist out; budget bounds the
// entries of one answer.
func ScriptTree(list func(dir string) ([]ScriptEntry, error), dir string, deep bool, budget *int) ([]File, error) {
	entries, err := list(dir)
	if err != nil {
		return nil, err
	}
	out := make([]File, 0, len(entries))
	for _, e := range entries {
		if scriptSkip[e.Name] {
			continue
		}
		if *budget--; *budget < 0 {
			return nil, errs.TooLargef("path", "the tree holds more than %d entries; list one folder with ?path=", scriptpath.MaxEntries)
		}
		key := path.Join(dir, e.Name)
		f := File{Title: e.Name, Key: key, Parent: dir, CreateTime: e.MtimeMs}
		if e.Dir {
			f.Type, f.Children = "directory", []File{}
			if deep {
				if f.Children, err = ScriptTree(list, key, true, budget); err != nil {
					return nil, err
				}
			}
		} else {
			size := e.Size
			f.Type, f.Size = "file", &size
		}
		out = append(out, f)
	}
	return out, nil
}

// FormPart is one part of a multipart form as mime/multipart's Part reads
// it (httpkit.MultipartParts adapts a reader): core links no MIME or
// network code, so the form arrives as this interface.
type FormPart = interface {
	FormName() string
	FileName() string
	Read(p []byte) (int, error)
}

// DecodeScriptForm reads POST /open/scripts sent as the multipart form
// QingLong's panel sends (editNameModal.tsx): at most 16 parts; a file
// part named "file" is the upload. The caller bounds the body.
func DecodeScriptForm(next func() (FormPart, error)) (ScriptWrite, []byte, error) {
	var in ScriptWrite
	var upload []byte
	for parts := 0; ; parts++ {
		part, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || parts >= 16 {
			return in, nil, errs.Invalidf("", "body: a multipart form of at most 16 parts and %d bytes expected", ScriptMaxBody)
		}
		val, err := io.ReadAll(part)
		if err != nil {
			return in, nil, errs.TooLargef("", "body is over %d bytes", ScriptMaxBody)
		}
		switch part.FormName() {
		case "filename":
			in.Filename = string(val)
		case "path":
			in.Path = string(val)
		case "content":
			c := string(val)
			in.Content = &c
		case "originFilename":
			in.OriginFilename = string(val)
		case "directory":
			in.Directory = string(val)
		case "file":
			if part.FileName() != "" {
				upload = val
			} else {
				in.File = string(val)
			}
		default:
			return in, nil, errs.Invalidf(part.FormName(), "is not a field of this form")
		}
	}
	return in, upload, nil
}
