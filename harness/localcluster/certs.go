package localcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds everything the control plane needs to talk TLS on loopback: one
// CA that signs the API server's and the webhook's serving certificates (so a
// single caBundle/CA file covers both), and the service-account signing key.
type pki struct {
	caCertFile string
	caCertPEM  []byte

	apiserverCertFile, apiserverKeyFile string
	webhookCertFile, webhookKeyFile     string
	saKeyFile, saPubFile                string
	tokenFile                           string
	adminToken                          string
	// controllersToken authenticates vc-controller-manager-paddle as the
	// ServiceAccount Volcano's release manifest runs it as, the identity
	// the paddle pod admission lets create Paddle jobs' pods.
	controllersToken string
}

// ControllersUser is the user name vc-controller-manager-paddle runs as
// here, as on a cluster installed from Volcano's release manifest.
const ControllersUser = "system:serviceaccount:volcano-system:volcano-controllers"

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "volcano-paddle-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p := &pki{caCertFile: filepath.Join(dir, "ca.crt")}
	p.caCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(p.caCertFile, p.caCertPEM, 0o600); err != nil {
		return nil, err
	}

	serving := func(name string, serial int64) (string, string, error) {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return "", "", err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
			DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return "", "", err
		}
		certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			return "", "", err
		}
		if err := writeKey(keyFile, key); err != nil {
			return "", "", err
		}
		return certFile, keyFile, nil
	}
	if p.apiserverCertFile, p.apiserverKeyFile, err = serving("apiserver", 2); err != nil {
		return nil, err
	}
	if p.webhookCertFile, p.webhookKeyFile, err = serving("webhook", 3); err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	p.saKeyFile, p.saPubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeKey(p.saKeyFile, saKey); err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return nil, err
	}

	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p.adminToken = hex.EncodeToString(tok)
	p.tokenFile = filepath.Join(dir, "tokens.csv")
	// token,user,uid,"group1,group2": system:masters bypasses authorization.
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p.controllersToken = hex.EncodeToString(tok)
	line := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,%s,volcano-controllers,\"system:masters\"\n",
		p.adminToken, p.controllersToken, ControllersUser)
	if err := os.WriteFile(p.tokenFile, []byte(line), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func writeKey(path string, key *rsa.PrivateKey) error {
	der := x509.MarshalPKCS1PrivateKey(key)
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}), 0o600)
}
