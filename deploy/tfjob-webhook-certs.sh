#!/usr/bin/env bash
# The certificate of tf-operator's TFJob conversion webhook, the Secret that carries it, and the
# CRD's caBundle that makes the API server trust it.
#
#   deploy/tfjob-webhook-certs.sh DIR            make (or renew) the certificate in DIR
#   deploy/tfjob-webhook-certs.sh DIR --apply    ...then create/replace the Secret and set the
#                                                TFJob CRD's caBundle with kubectl
#
# DIR holds, after a run:
#   ca.pem, ca-key.pem          the webhook's own CA (EC P-256, 10 years), trusted by the API server
#                               for this webhook only (the CRD's caBundle). Keep ca-key.pem off the
#                               cluster (it is never put in a Secret).
#   server.pem, server-key.pem  tf-operator's serving certificate (1 year) for the Service the CRD
#                               names: tf-operator-webhook.kube-batchd.svc (the name the API server
#                               verifies), and .svc.cluster.local
# An existing CA in DIR is reused, so a second run renews the serving certificate only.
#
# With --apply (the current kubectl context; $KUBECTL, default "kubectl", is the command, e.g.
# "kubectl --server http://127.0.0.1:8080"):
#   the Namespace kube-batchd (if missing), the Secret kube-batchd/tf-operator-webhook-tls
#   (tls.crt, tls.key: deploy/base/tf-operator.yaml mounts it read-only), and
#   spec.conversion.webhook.clientConfig.caBundle of tfjobs.kubeflow.org (apply
#   deploy/base/crds/tfjob.yaml first).
#
# Rotation: the serving certificate: run this again with the same DIR and --apply, then
# kubectl -n kube-batchd rollout restart deployment/tf-operator (it reads the files at start; the
# caBundle is unchanged). A new CA: put both CAs in the caBundle first (cat old/ca.pem new/ca.pem |
# base64 -w0, kubectl patch crd), then switch the Secret and restart, then drop the old CA.
set -euo pipefail

dir=${1:?usage: tfjob-webhook-certs.sh DIR [--apply]}
apply=${2:-}
days=${KB_CERT_DAYS:-365}
ns=${KB_WEBHOOK_NAMESPACE:-kube-batchd}
service=tf-operator-webhook.$ns.svc
kubectl=${KUBECTL:-kubectl}
mkdir -p "$dir"
cd "$dir"
umask 077

if [ ! -f ca.pem ] || [ ! -f ca-key.pem ]; then
    openssl ecparam -name prime256v1 -genkey -noout -out ca-key.pem
    openssl req -x509 -new -key ca-key.pem -sha256 -days 3650 -subj "/CN=tf-operator-webhook-ca" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem 2>/dev/null
fi
openssl ecparam -name prime256v1 -genkey -noout -out server-key.pem.new
openssl req -new -key server-key.pem.new -subj "/CN=$service" -out server.csr
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" "subjectAltName=DNS:$service,DNS:$service.cluster.local" \
    >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -sha256 \
    -days "$days" -extfile server.ext -out server.pem.new 2>/dev/null
mv server-key.pem.new server-key.pem
mv server.pem.new server.pem
rm -f server.csr server.ext
openssl verify -CAfile ca.pem server.pem >/dev/null

if [ "$apply" = --apply ]; then
    $kubectl create namespace "$ns" --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
    $kubectl -n "$ns" create secret generic tf-operator-webhook-tls \
        --from-file=tls.crt=server.pem --from-file=tls.key=server-key.pem \
        --dry-run=client -o yaml | $kubectl apply -f - >/dev/null
    ca=$(base64 -w0 <ca.pem)
    $kubectl patch crd tfjobs.kubeflow.org --type merge \
        -p "{\"spec\":{\"conversion\":{\"webhook\":{\"clientConfig\":{\"caBundle\":\"$ca\"}}}}}" >/dev/null
    echo "Secret $ns/tf-operator-webhook-tls and the caBundle of tfjobs.kubeflow.org are set"
fi
