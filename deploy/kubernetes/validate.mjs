// Validates deploy/kubernetes/*.yaml offline: every object against the
// Kubernetes OpenAPI schema of its kind (npm's kubernetes-models, whose
// validate() is @kubernetes-models/validate: JSON Schema, ajv), then the
// security fields docs/fleet.md promises. One line per problem; exit 1 if
// any, else "k8s: N objects valid, M security checks".
//
//   NODE_PATH=DIR/node_modules node validate.mjs deploy/kubernetes
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const nodeModules = process.env.K8S_NODE_MODULES;
const req = (m) => require(path.join(nodeModules, m));
const yaml = req("js-yaml");

const dir = process.argv[2];
const problems = [];
const objects = [];
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
  for (const doc of yaml.loadAll(fs.readFileSync(path.join(dir, f), "utf8"))) {
    if (doc) objects.push({ file: f, doc });
  }
}

// apiVersion + kind -> the model's module in kubernetes-models.
function modelOf(doc) {
  const [group, version] = doc.apiVersion.includes("/")
    ? doc.apiVersion.split("/") : ["", doc.apiVersion];
  const dirName = group === "" ? version : path.join(group, version);
  const mod = path.join("kubernetes-models", dirName, doc.kind);
  try {
    return req(mod)[doc.kind];
  } catch (e) {
    return null;
  }
}

let validated = 0;
for (const { file, doc } of objects) {
  const name = `${file}: ${doc.kind}/${doc.metadata && doc.metadata.name}`;
  if (doc.kind === "Kustomization") continue;  // kustomize's, not the API's
  const Model = modelOf(doc);
  if (!Model) {
    problems.push(`${name}: no schema for ${doc.apiVersion} ${doc.kind}`);
    continue;
  }
  try {
    new Model(doc).validate();
    validated++;
  } catch (e) {
    problems.push(`${name}: ${e.message}`);
  }
}

// ---- security fields ----
let checks = 0;
function expect(cond, what) {
  checks++;
  if (!cond) problems.push(what);
}
const byName = (kind, n) => objects.map((o) => o.doc).find(
  (d) => d.kind === kind && d.metadata.name === n);
const namespaces = new Map(objects.map((o) => o.doc).filter((d) => d.kind === "Namespace")
  .map((d) => [d.metadata.name, d.metadata.labels || {}]));

// The Restricted level (Pod Security Standards), for every pod in a
// namespace that enforces it.
function restricted(w) {
  const n = `${w.kind}/${w.metadata.name}`;
  const pod = w.spec.template.spec;
  const psc = pod.securityContext || {};
  expect(namespaces.get(w.metadata.namespace)?.["pod-security.kubernetes.io/enforce"]
    === "restricted", `${n}: its namespace does not enforce restricted`);
  expect(!pod.hostPID && !pod.hostNetwork && !pod.hostIPC, `${n}: host namespaces`);
  expect((pod.volumes || []).every((v) => !v.hostPath), `${n}: hostPath volume`);
  for (const c of pod.containers.concat(pod.initContainers || [])) {
    const sc = c.securityContext || {};
    const cn = `${n} container ${c.name}`;
    expect(sc.runAsNonRoot === true || (psc.runAsNonRoot === true && sc.runAsNonRoot !== false),
      `${cn}: runAsNonRoot`);
    expect(sc.runAsUser !== 0 && psc.runAsUser !== 0, `${cn}: runs as uid 0`);
    expect(sc.allowPrivilegeEscalation === false, `${cn}: allowPrivilegeEscalation`);
    expect(sc.privileged !== true, `${cn}: privileged`);
    expect(JSON.stringify(sc.capabilities?.drop) === '["ALL"]', `${cn}: drop ALL`);
    expect((sc.capabilities?.add || []).every((a) => a === "NET_BIND_SERVICE"),
      `${cn}: adds capabilities`);
    expect(sc.readOnlyRootFilesystem === true, `${cn}: readOnlyRootFilesystem`);
    const seccomp = (sc.seccompProfile || psc.seccompProfile || {}).type;
    expect(seccomp === "RuntimeDefault" || seccomp === "Localhost", `${cn}: seccomp`);
  }
}

// A malformed object (already reported by its schema) may lack what the
// checks read: that is one more problem, not a crash.
try {
const deploy = byName("Deployment", "unwindd");
expect(deploy, "no Deployment unwindd");
if (deploy) {
  restricted(deploy);
  const pod = deploy.spec.template.spec;
  const c = pod.containers[0];
  const args = c.args.join(" ");
  for (const f of ["--tls-cert=", "--tls-key=", "--tls-client-ca=", "--tls-allow="]) {
    expect(args.includes(f), `Deployment/unwindd: no ${f}`);
  }
  // Every --tls-* file is in the mounted Secret.
  const tlsMount = c.volumeMounts.find((m) => m.name === "tls");
  const tlsVolume = pod.volumes.find((v) => v.name === "tls");
  expect(tlsVolume?.secret?.secretName === "unwindd-tls", "Deployment/unwindd: tls Secret");
  for (const a of c.args.filter((a) => /^--tls-(cert|key|client-ca)=/.test(a))) {
    expect(tlsMount && a.split("=")[1].startsWith(tlsMount.mountPath + "/"),
      `Deployment/unwindd: ${a} is not in the Secret's mount`);
  }
  expect(c.readinessProbe?.grpc && c.livenessProbe?.grpc,
    "Deployment/unwindd: gRPC readiness and liveness probes");
  const healthPort = c.args.find((a) => a.startsWith("--health-listen="));
  expect(healthPort && healthPort.endsWith(":" + c.readinessProbe?.grpc?.port),
    "Deployment/unwindd: the probes' port is --health-listen's");
  expect(pod.volumes.some((v) => v.emptyDir && c.volumeMounts.some(
    (m) => m.name === v.name && m.mountPath === "/var/cache/unwindd")),
    "Deployment/unwindd: an emptyDir for the cache");
  const grace = pod.terminationGracePeriodSeconds || 30;
  const drain = Number((c.args.find((a) => a.startsWith("--drain-timeout=")) || "=10")
    .split("=")[1]);
  expect(grace > drain + 3, "Deployment/unwindd: terminationGracePeriodSeconds "
    + "leaves no time for --drain-timeout after preStop");
  const svc = byName("Service", "unwindd");
  expect(svc?.spec.clusterIP === "None", "Service/unwindd: not headless");
  const hpa = byName("HorizontalPodAutoscaler", "unwindd");
  expect(hpa?.spec.scaleTargetRef.name === "unwindd", "no HPA for unwindd");
  const pdb = byName("PodDisruptionBudget", "unwindd");
  expect(pdb && JSON.stringify(pdb.spec.selector.matchLabels)
    === JSON.stringify(deploy.spec.selector.matchLabels), "no PDB for unwindd's pods");
}

const dbg = byName("Deployment", "debuginfod");
expect(dbg, "no Deployment debuginfod");
if (dbg) restricted(dbg);
expect(deploy && dbg && deploy.spec.template.spec.containers[0].args.some(
  (a) => a.startsWith("--debuginfod=http://debuginfod.")), "replicas do not use debuginfod");

const ds = byName("DaemonSet", "unwindd-node");
expect(ds, "no DaemonSet unwindd-node");
if (ds) {
  const pod = ds.spec.template.spec;
  const c = pod.containers[0];
  const sc = c.securityContext || {};
  expect(pod.hostPID === true, "DaemonSet/unwindd-node: hostPID");
  expect(!pod.hostNetwork, "DaemonSet/unwindd-node: hostNetwork");
  expect(sc.privileged === false, "DaemonSet/unwindd-node: privileged is not false");
  expect(sc.allowPrivilegeEscalation === false, "DaemonSet/unwindd-node: allowPrivilegeEscalation");
  expect(JSON.stringify(sc.capabilities?.drop) === '["ALL"]', "DaemonSet/unwindd-node: drop ALL");
  expect(JSON.stringify(sc.capabilities?.add) === '["SYS_PTRACE"]',
    "DaemonSet/unwindd-node: adds more than SYS_PTRACE");
  expect(sc.readOnlyRootFilesystem === true, "DaemonSet/unwindd-node: readOnlyRootFilesystem");
  const sock = pod.volumes.find((v) => v.hostPath);
  const mount = c.volumeMounts.find((m) => m.name === sock?.name);
  expect(sock && mount && c.args.some((a) => a.startsWith(`--listen=unix:${mount.mountPath}/`)),
    "DaemonSet/unwindd-node: the Unix socket is not in the hostPath");
  const svc = byName("Service", "unwindd-node");
  expect(svc?.spec.internalTrafficPolicy === "Local",
    "Service/unwindd-node: internalTrafficPolicy is not Local");
}

} catch (e) {
  problems.push(`security checks could not read the manifests: ${e.message}`);
}

for (const p of problems) console.log("k8s: " + p);
console.log(`k8s: ${validated} objects valid against their schema, ${checks} security checks, `
  + `${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
