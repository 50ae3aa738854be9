//! `dbduel k8s`: the Kubernetes objects that run a study's shards, printed as one `v1` List
//! for `kubectl apply -f -`: a ConfigMap holding the study file, an Indexed Job of N
//! completions run N at a time (each pod is shard `JOB_COMPLETION_INDEX` of N, its run group
//! the Job's uid), the target passwords as references to a Secret (never their values), and a
//! claim on a volume every pod writes its run directory to.
//!
//! The objects are written as JSON values holding just the fields dbduel sets, each object's
//! keys in the order the Kubernetes API's own types print them (`apiVersion` and `kind`
//! first, then mostly alphabetically); the tests read them back with those types and check
//! they print the same text.

use serde_json::{Value, json};

/// Where the study file is mounted in each pod.
pub const STUDY_DIR: &str = "/etc/dbduel";
/// Where each pod writes its run directory.
pub const RESULTS_DIR: &str = "/results";

/// What to launch.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Names the Job, its ConfigMap and claim (a DNS label).
    pub name: String,
    pub namespace: Option<String>,
    /// An image with `dbduel` on its PATH.
    pub image: String,
    pub shards: u32,
    /// The study file's text, and its file name in the ConfigMap.
    pub study_text: String,
    pub study_file: String,
    /// Further `dbduel run` arguments (`--scale`, `--set`, `--contender`).
    pub run_args: Vec<String>,
    /// Environment variables the study reads target passwords from, and the Secret holding
    /// each under the same key.
    pub password_envs: Vec<String>,
    pub secret: Option<String>,
    /// An existing claim for the results; when None one is made of `results_size`.
    pub results_claim: Option<String>,
    pub results_size: String,
    /// The port each pod serves its live metrics on (on its own address), if any.
    pub metrics_port: Option<u16>,
}

/// Is `s` a name Kubernetes takes for these objects (an RFC 1123 label, ≤ 52 characters so
/// that the Job's pods' names fit)?
pub fn check_name(s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 52
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--name {s:?}: Kubernetes names are 1 to 52 lower-case letters, digits and '-', not starting or ending with '-'"
        ))
    }
}

fn meta(l: &Launch, name: String) -> Value {
    let mut meta = json!({ "labels": labels(l), "name": name });
    if let Some(ns) = &l.namespace {
        meta["namespace"] = json!(ns);
    }
    meta
}

fn labels(l: &Launch) -> Value {
    json!({
        "app.kubernetes.io/instance": l.name,
        "app.kubernetes.io/name": "dbduel",
    })
}

/// The objects, in the order `kubectl apply` should create them, as one `v1` List.
pub fn manifests(l: &Launch) -> Result<Value, String> {
    check_name(&l.name)?;
    if !l.password_envs.is_empty() && l.secret.is_none() {
        return Err(format!(
            "the study reads target passwords from {}: pass --secret NAME, a Secret with those keys (kubectl create secret generic NAME --from-literal={}=…)",
            l.password_envs.join(", "),
            l.password_envs[0]
        ));
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": { l.study_file.as_str(): l.study_text },
        "metadata": meta(l, format!("{}-study", l.name)),
    });
    let claim_name = l
        .results_claim
        .clone()
        .unwrap_or_else(|| format!("{}-results", l.name));
    let claim = l.results_claim.is_none().then(|| {
        json!({
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta(l, claim_name.clone()),
            "spec": {
                // every shard's pod writes to it, wherever it runs
                "accessModes": ["ReadWriteMany"],
                "resources": { "requests": { "storage": l.results_size } },
            },
        })
    });
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(l, l.name.clone()),
        "spec": {
            // a shard that fails fails the run: the others fail at their next meeting
            "backoffLimit": 0,
            "completionMode": "Indexed",
            "completions": l.shards,
            "parallelism": l.shards,
            "template": {
                "metadata": { "labels": labels(l) },
                "spec": pod(l, &claim_name),
            },
        },
    });
    let items: Vec<Value> = [Some(config), claim, Some(job)]
        .into_iter()
        .flatten()
        .collect();
    Ok(json!({ "apiVersion": "v1", "kind": "List", "items": items }))
}

fn pod(l: &Launch, claim: &str) -> Value {
    let mut command: Vec<String> = [
        "dbduel",
        "run",
        &format!("{STUDY_DIR}/{}", l.study_file),
        "--shards",
        &l.shards.to_string(),
        "--out",
        RESULTS_DIR,
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    command.extend(l.run_args.iter().cloned());
    if let Some(port) = l.metrics_port {
        // A pod is scraped from outside itself, so it listens on its own address.
        command.extend([
            "--metrics-listen".into(),
            format!("0.0.0.0:{port}"),
            "--metrics-allow-remote".into(),
        ]);
    }
    // The shard's index comes from JOB_COMPLETION_INDEX, which the Job sets; the run group
    // is the Job's uid, new for each Job.
    let mut env = vec![json!({
        "name": "DBDUEL_RUN_GROUP",
        "valueFrom": {
            "fieldRef": {
                "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']",
            },
        },
    })];
    for var in &l.password_envs {
        env.push(json!({
            "name": var,
            "valueFrom": {
                "secretKeyRef": {
                    "key": var,
                    "name": l.secret.clone().unwrap_or_default(),
                },
            },
        }));
    }
    // The keys in the order the API's Container type prints them.
    let mut container = serde_json::Map::new();
    container.insert("command".into(), json!(command));
    container.insert("env".into(), json!(env));
    container.insert("image".into(), json!(l.image));
    container.insert("name".into(), json!("dbduel"));
    if let Some(port) = l.metrics_port {
        // named, so that Prometheus's pod discovery keeps this port by its name
        container.insert(
            "ports".into(),
            json!([{ "containerPort": port, "name": "metrics" }]),
        );
    }
    container.insert(
        "volumeMounts".into(),
        json!([
            { "mountPath": STUDY_DIR, "name": "study", "readOnly": true },
            { "mountPath": RESULTS_DIR, "name": "results" },
        ]),
    );
    json!({
        // One shard a node where the cluster has them: the point is many client machines.
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{
                    "podAffinityTerm": {
                        "labelSelector": { "matchLabels": labels(l) },
                        "topologyKey": "kubernetes.io/hostname",
                    },
                    "weight": 100,
                }],
            },
        },
        "containers": [container],
        "restartPolicy": "Never",
        "volumes": [
            { "configMap": { "name": format!("{}-study", l.name) }, "name": "study" },
            { "name": "results", "persistentVolumeClaim": { "claimName": claim } },
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim};
    use serde::Serialize;
    use serde::de::DeserializeOwned;

    fn launch() -> Launch {
        Launch {
            name: "dbduel-oltp".into(),
            namespace: Some("bench".into()),
            image: "registry.example/dbduel:1".into(),
            shards: 4,
            study_text: "[study]\nname = \"oltp\"\n".into(),
            study_file: "oltp.toml".into(),
            run_args: vec!["--scale".into(), "quick".into()],
            password_envs: vec!["DBDUEL_PW".into()],
            secret: Some("db-password".into()),
            results_claim: None,
            results_size: "5Gi".into(),
            metrics_port: None,
        }
    }

    #[test]
    fn manifests_are_kubernetes_objects_with_no_secret_value() {
        let list = manifests(&launch()).expect("manifests");
        let items = list["items"].as_array().expect("items");
        assert_eq!(list["kind"], "List");
        let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "Job"]);
        let job: Job = serde_json::from_value(items[2].clone()).expect("a Job");
        let spec = job.spec.expect("spec");
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
        let pod = spec.template.spec.expect("pod");
        let c = &pod.containers[0];
        let cmd = c.command.clone().unwrap().join(" ");
        assert!(
            cmd.starts_with("dbduel run /etc/dbduel/oltp.toml --shards 4 --out /results"),
            "{cmd}"
        );
        let env = c.env.clone().unwrap();
        let pw = env
            .iter()
            .find(|e| e.name == "DBDUEL_PW")
            .expect("password env");
        assert!(pw.value.is_none(), "a value, not a reference");
        let r = pw
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(
            (r.name.as_str(), r.key.as_str()),
            ("db-password", "DBDUEL_PW")
        );
        let _: ConfigMap = serde_json::from_value(items[0].clone()).expect("a ConfigMap");
        let _: PersistentVolumeClaim = serde_json::from_value(items[1].clone()).expect("a claim");
        assert_eq!(items[0]["data"]["oltp.toml"], "[study]\nname = \"oltp\"\n");
    }

    #[test]
    fn a_metrics_port_is_listened_on_the_pods_address_and_named() {
        let mut l = launch();
        l.metrics_port = Some(9464);
        let list = manifests(&l).expect("manifests");
        let job: Job = serde_json::from_value(list["items"][2].clone()).expect("a Job");
        let c = &job.spec.unwrap().template.spec.unwrap().containers[0];
        let cmd = c.command.clone().unwrap().join(" ");
        assert!(
            cmd.ends_with("--metrics-listen 0.0.0.0:9464 --metrics-allow-remote"),
            "{cmd}"
        );
        let port = &c.ports.as_ref().expect("ports")[0];
        assert_eq!(
            (port.container_port, port.name.as_deref()),
            (9464, Some("metrics"))
        );
        let none = manifests(&launch()).expect("manifests");
        let text = none.to_string();
        assert!(!text.contains("metrics"), "no port unless asked: {text}");
    }

    #[test]
    fn a_password_needs_a_secret_and_names_are_checked() {
        let mut l = launch();
        l.secret = None;
        let e = manifests(&l).unwrap_err();
        assert!(
            e.contains("--secret NAME") && e.contains("DBDUEL_PW"),
            "{e}"
        );
        for bad in ["Upper", "-lead", "a_b", ""] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        let mut l = launch();
        l.results_claim = Some("shared".into());
        let list = manifests(&l).unwrap();
        assert_eq!(list["items"].as_array().unwrap().len(), 2, "no claim made");
    }

    /// Read back as the API's type `T` and printed again, `item` is the same text: every
    /// field is one the API knows, of its type, and in the order its types print.
    fn same_as_api_type<T: DeserializeOwned + Serialize>(item: &Value) {
        let typed: T = serde_json::from_value(item.clone()).expect("an API object");
        let again = serde_json::to_value(&typed).expect("printed");
        assert_eq!(
            serde_json::to_string_pretty(&again).unwrap(),
            serde_json::to_string_pretty(item).unwrap()
        );
    }

    #[test]
    fn manifests_print_as_the_api_types_print() {
        let mut l = launch();
        l.password_envs.push("DBDUEL_PW2".into());
        for (namespace, port) in [(Some("bench".to_string()), Some(9464)), (None, None)] {
            l.namespace = namespace;
            l.metrics_port = port;
            let list = manifests(&l).expect("manifests");
            let items = list["items"].as_array().expect("items");
            same_as_api_type::<ConfigMap>(&items[0]);
            same_as_api_type::<PersistentVolumeClaim>(&items[1]);
            same_as_api_type::<Job>(&items[2]);
        }
    }
}
