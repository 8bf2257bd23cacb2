package qlimport

// Archive formats and bounds of an uploaded QingLong data directory (the
// edge's and the cluster's import routes).
const (
	FormatTar   = "tar"
	FormatTarGz = "tar.gz"
	// MaxUploadBytes bounds an uploaded archive, unpacked: a database and
	// a full scripts folder.
	MaxUploadBytes = 2 << 30
)
