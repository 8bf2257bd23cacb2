package devpki

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
)

func parseCRL(p []byte) (*x509.RevocationList, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "X509 CRL" {
		return nil, errors.New("not a PEM CRL")
	}
	return x509.ParseRevocationList(b.Bytes)
}
