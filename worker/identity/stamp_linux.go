package identity

import "syscall"

// stampOf converts field by field: the widths differ between 32- and 64-bit
// targets (mips has 32-bit seconds and device numbers).
func stampOf(s *syscall.Stat_t) fileStamp {
	return fileStamp{
		dev: uint64(s.Dev), ino: uint64(s.Ino), size: int64(s.Size),
		mtimeNs: int64(s.Mtim.Sec)*1e9 + int64(s.Mtim.Nsec),
		ctimeNs: int64(s.Ctim.Sec)*1e9 + int64(s.Ctim.Nsec),
	}
}
