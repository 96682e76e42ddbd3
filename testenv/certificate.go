package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// proxyCertificate is the serving certificate of every FaultProxy of the
// process, made once: a self-signed one for 127.0.0.1, which the proxy's
// rest.Configs and kubeconfigs trust. A proxy serves TLS because
// clientcmd hands a kubeconfig's credentials to TLS servers only.
var proxyCertificate = sync.OnceValues(func() (certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certificate{}, fmt.Errorf("testenv: fault proxy certificate: %w", err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "converge testenv fault proxy"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return certificate{}, fmt.Errorf("testenv: fault proxy certificate: %w", err)
	}
	return certificate{
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		tls: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}, nil
})

// certificate is a serving certificate, as PEM for clients to trust and
// as the server's.
type certificate struct {
	pem []byte
	tls tls.Certificate
}
