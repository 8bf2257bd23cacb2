package httpkit

import "mime/multipart"

// MultipartParts adapts a multipart reader to the part iterator the pure
// form decoders in core take (core links no MIME or network code): each
// call returns the next part, or the reader's error (io.EOF at the end).
func MultipartParts(mr *multipart.Reader) func() (interface {
	FormName() string
	FileName() string
	Read(p []byte) (int, error)
}, error) {
	return func() (interface {
		FormName() string
		FileName() string
		Read(p []byte) (int, error)
	}, error) {
		p, err := mr.NextPart()
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
