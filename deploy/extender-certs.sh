#!/usr/bin/env bash
# Certificates for kube-batchd's scheduler extender (kube-scheduler -> kube-batchd over HTTPS,
# both sides authenticated), and the two Secrets that carry them.
#
#   deploy/extender-certs.sh DIR            make (or renew) the certificates in DIR
#   deploy/extender-certs.sh DIR --apply    ...and create/replace the Secrets with kubectl
#
# DIR holds, after a run:
#   ca.pem, ca-key.pem          the extender's own CA (EC P-256, 10 years). Used for nothing else:
#                               every certificate it signs may call or serve the extender. Keep
#                               ca-key.pem off the cluster (it is never put in a Secret).
#   server.pem, server-key.pem  kube-batchd's serving certificate (1 year) for the Service
#                               kube-batchd.kube-batchd.svc (and .svc.cluster.local), plus the
#                               IP addresses in $KB_EXTENDER_IPS (space-separated: the Service's
#                               ClusterIP when kube-scheduler runs with hostNetwork and cannot
#                               resolve Service names)
#   client.pem, client-key.pem  kube-scheduler's client certificate (1 year), CN=kube-scheduler,
#                               extended key usage clientAuth only
# An existing CA in DIR is reused, so a second run renews the two leaf certificates only.
#
# Secrets (--apply; the current kubectl context):
#   kube-batchd/kube-batchd-extender-tls           tls.crt, tls.key (server), ca.crt (the CA
#                                                  client certificates must chain to)
#   kube-system/kube-batchd-extender-client        tls.crt, tls.key (client), ca.crt (the CA the
#                                                  server certificate must chain to)
# kube-batchd.yaml mounts the first; mount the second into kube-scheduler at
# /etc/kubernetes/kube-batchd-extender/ (kube-scheduler-extender.yaml names the files there).
#
# Rotation (both daemons read the files once, at start):
#   leaves: run this again with the same DIR and --apply, then
#           kubectl -n kube-batchd rollout restart deployment/kube-batchd, and restart
#           kube-scheduler (its static pod: move its manifest out and back, or its Deployment).
#           Old and new leaves chain to the same CA, so the order does not matter.
#   the CA: make the new CA in a new DIR; put both CAs in each Secret's ca.crt (cat old/ca.pem
#           new/ca.pem) and restart both daemons; then switch the leaves to the new DIR's and
#           restart; then drop the old CA from ca.crt and restart once more.
set -euo pipefail

dir=${1:?usage: extender-certs.sh DIR [--apply]}
apply=${2:-}
days=${KB_CERT_DAYS:-365}
service=${KB_EXTENDER_SERVICE:-kube-batchd.kube-batchd.svc}
sans="DNS:$service,DNS:$service.cluster.local"
for ip in ${KB_EXTENDER_IPS:-}; do sans="$sans,IP:$ip"; done
mkdir -p "$dir"
cd "$dir"
umask 077

if [ ! -f ca.pem ] || [ ! -f ca-key.pem ]; then
    openssl ecparam -name prime256v1 -genkey -noout -out ca-key.pem
    openssl req -x509 -new -key ca-key.pem -sha256 -days 3650 -subj "/CN=kube-batchd-extender-ca" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
fi

leaf() { # NAME CN EXTENSIONS
    openssl ecparam -name prime256v1 -genkey -noout -out "$1-key.pem.new"
    openssl req -new -key "$1-key.pem.new" -subj "/CN=$2" -out "$1.csr"
    printf '%s\n' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -sha256 \
        -days "$days" -extfile "$1.ext" -out "$1.pem.new"
    mv "$1-key.pem.new" "$1-key.pem"
    mv "$1.pem.new" "$1.pem"
    rm -f "$1.csr" "$1.ext"
}

leaf server kube-batchd "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$sans"
leaf client kube-scheduler "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
openssl verify -CAfile ca.pem server.pem client.pem

if [ "$apply" = --apply ]; then
    kubectl -n kube-batchd create secret generic kube-batchd-extender-tls \
        --from-file=tls.crt=server.pem --from-file=tls.key=server-key.pem \
        --from-file=ca.crt=ca.pem --dry-run=client -o yaml | kubectl apply -f -
    kubectl -n kube-system create secret generic kube-batchd-extender-client \
        --from-file=tls.crt=client.pem --from-file=tls.key=client-key.pem \
        --from-file=ca.crt=ca.pem --dry-run=client -o yaml | kubectl apply -f -
fi
