//! `dbduel k8s`: the Kubernetes objects that run a study's shards, built from the API's typed
//! structs and printed as one `v1` List for `kubectl apply -f -`: a ConfigMap holding the
//! study file, an Indexed Job of N completions run N at a time (each pod is shard
//! `JOB_COMPLETION_INDEX` of N, its run group the Job's uid), the target passwords as
//! references to a Secret (never their values), and a claim on a volume every pod writes its
//! run directory to.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, EnvVar, EnvVarSource,
    ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodAffinityTerm, PodAntiAffinity, PodSpec, PodTemplateSpec,
    SecretKeySelector, Volume, VolumeMount, VolumeResourceRequirements, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use std::collections::BTreeMap;

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

fn meta(l: &Launch, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: l.namespace.clone(),
        labels: Some(labels(l)),
        ..ObjectMeta::default()
    }
}

fn labels(l: &Launch) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "dbduel".to_string()),
        ("app.kubernetes.io/instance".to_string(), l.name.clone()),
    ])
}

/// The objects, in the order `kubectl apply` should create them, as one `v1` List.
pub fn manifests(l: &Launch) -> Result<serde_json::Value, String> {
    check_name(&l.name)?;
    if !l.password_envs.is_empty() && l.secret.is_none() {
        return Err(format!(
            "the study reads target passwords from {}: pass --secret NAME, a Secret with those keys (kubectl create secret generic NAME --from-literal={}=…)",
            l.password_envs.join(", "),
            l.password_envs[0]
        ));
    }
    let config = ConfigMap {
        metadata: meta(l, format!("{}-study", l.name)),
        data: Some(BTreeMap::from([(
            l.study_file.clone(),
            l.study_text.clone(),
        )])),
        ..ConfigMap::default()
    };
    let claim_name = l
        .results_claim
        .clone()
        .unwrap_or_else(|| format!("{}-results", l.name));
    let claim = l.results_claim.is_none().then(|| PersistentVolumeClaim {
        metadata: meta(l, claim_name.clone()),
        spec: Some(PersistentVolumeClaimSpec {
            // every shard's pod writes to it, wherever it runs
            access_modes: Some(vec!["ReadWriteMany".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(l.results_size.clone()),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    });
    let job = Job {
        metadata: meta(l, l.name.clone()),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(l.shards as i32),
            parallelism: Some(l.shards as i32),
            // a shard that fails fails the run: the others fail at their next meeting
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(l)),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod(l, &claim_name)),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    let mut items = vec![to_value(&config)?];
    if let Some(c) = &claim {
        items.push(to_value(c)?);
    }
    items.push(to_value(&job)?);
    Ok(serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": items }))
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, String> {
    serde_json::to_value(v).map_err(|e| format!("writing a manifest: {e}"))
}

fn pod(l: &Launch, claim: &str) -> PodSpec {
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
    // The shard's index comes from JOB_COMPLETION_INDEX, which the Job sets; the run group
    // is the Job's uid, new for each Job.
    let mut env = vec![EnvVar {
        name: "DBDUEL_RUN_GROUP".into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.labels['batch.kubernetes.io/controller-uid']".into(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }];
    for var in &l.password_envs {
        env.push(EnvVar {
            name: var.clone(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: l.secret.clone().unwrap_or_default(),
                    key: var.clone(),
                    ..SecretKeySelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        });
    }
    PodSpec {
        restart_policy: Some("Never".into()),
        // One shard a node where the cluster has them: the point is many client machines.
        affinity: Some(Affinity {
            pod_anti_affinity: Some(PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![
                    WeightedPodAffinityTerm {
                        weight: 100,
                        pod_affinity_term: PodAffinityTerm {
                            label_selector: Some(LabelSelector {
                                match_labels: Some(labels(l)),
                                ..LabelSelector::default()
                            }),
                            topology_key: "kubernetes.io/hostname".into(),
                            ..PodAffinityTerm::default()
                        },
                    },
                ]),
                ..PodAntiAffinity::default()
            }),
            ..Affinity::default()
        }),
        containers: vec![Container {
            name: "dbduel".into(),
            image: Some(l.image.clone()),
            command: Some(command),
            env: Some(env),
            volume_mounts: Some(vec![
                VolumeMount {
                    name: "study".into(),
                    mount_path: STUDY_DIR.into(),
                    read_only: Some(true),
                    ..VolumeMount::default()
                },
                VolumeMount {
                    name: "results".into(),
                    mount_path: RESULTS_DIR.into(),
                    ..VolumeMount::default()
                },
            ]),
            ..Container::default()
        }],
        volumes: Some(vec![
            Volume {
                name: "study".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: format!("{}-study", l.name),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            Volume {
                name: "results".into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim.to_string(),
                    ..PersistentVolumeClaimVolumeSource::default()
                }),
                ..Volume::default()
            },
        ]),
        ..PodSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
