//! `dbduel k8s`: check a study can run sharded, then print the Kubernetes objects that run its
//! shards (a ConfigMap with the study, an Indexed Job, Secret references, a results claim).

use super::failure::Failure;
use super::output::outln;
use crate::study::{Study, builtin};

/// `dbduel k8s`'s arguments.
#[derive(clap::Args, Debug)]
pub struct K8sArgs {
    /// Built-in study name or path to a study file (its contenders need targets).
    study: String,
    /// How many shards (pods), each on its own node where the cluster allows.
    #[arg(long, value_name = "N")]
    shards: u32,
    /// Container image with dbduel on its PATH.
    #[arg(long)]
    image: String,
    #[arg(long)]
    namespace: Option<String>,
    /// Name of the Job (and prefix of its ConfigMap and claim). Default: dbduel-STUDY.
    #[arg(long)]
    name: Option<String>,
    /// Secret holding each password the study reads (`password_env`), under the variable's
    /// name as its key.
    #[arg(long, value_name = "NAME")]
    secret: Option<String>,
    /// An existing ReadWriteMany claim for the results; default: one is made.
    #[arg(long, value_name = "CLAIM")]
    results_claim: Option<String>,
    /// Size of the claim made for the results.
    #[arg(long, default_value = "10Gi")]
    results_size: String,
    #[arg(long)]
    scale: Option<String>,
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    #[arg(long = "contender", value_name = "NAME")]
    contenders: Vec<String>,
    /// Each pod serves its live metrics on this port of its own address (`run
    /// --metrics-listen 0.0.0.0:PORT --metrics-allow-remote`), declared as the container's
    /// port `metrics` for Prometheus's pod discovery.
    #[arg(long, value_name = "PORT")]
    metrics_port: Option<u16>,
}

/// Print the manifests as one JSON list (`kubectl apply -f -`).
pub(super) fn exec(args: K8sArgs) -> Result<(), Failure> {
    let (source, loaded) = super::sharded::load(
        "k8s",
        &args.study,
        args.shards,
        args.scale.clone(),
        args.sets.clone(),
        args.contenders.clone(),
    )?;
    let study_file = match builtin::get(&args.study) {
        Some(_) => format!("{}.toml", args.study),
        None => "study.toml".to_string(),
    };
    let password_envs = password_envs(&loaded)?;
    // every pod listens on the same port of its own address
    let metrics_port = super::sharded::metrics_port(args.metrics_port, 1)?;
    let run_args = super::sharded::run_args(args.scale.as_ref(), &args.sets, &args.contenders);
    let launch = crate::k8s::Launch {
        name: args.name.unwrap_or_else(|| {
            format!("dbduel-{}", loaded.file.study.name)
                .to_ascii_lowercase()
                .replace('_', "-")
        }),
        namespace: args.namespace,
        image: args.image,
        shards: args.shards,
        study_text: source.text,
        study_file,
        run_args,
        password_envs,
        secret: args.secret,
        results_claim: args.results_claim,
        results_size: args.results_size,
        metrics_port,
    };
    let list = crate::k8s::manifests(&launch).map_err(Failure::bad_input)?;
    outln!(
        "{}",
        serde_json::to_string_pretty(&list).unwrap_or_default()
    );
    Ok(())
}

/// The environment variables the chosen contenders (and their replicas given by target) read
/// their passwords from, each once; a password file is refused, since the pods do not have it.
fn password_envs(loaded: &Study) -> Result<Vec<String>, Failure> {
    let mut envs = Vec::new();
    for c in &loaded.contenders {
        let Some(spec) = loaded.file.contenders.iter().find(|s| s.name == c.name) else {
            continue;
        };
        if spec.password_file.is_some() {
            return Err(Failure::bad_input(format!(
                "contender `{}` reads its password from a file, which the pods do not have: use password_env, and --secret",
                c.name
            )));
        }
        envs.extend(spec.password_env.clone());
        // Replicas given by target name their own (`options.replicas[i].password_env`):
        // the pods read those from the Secret too.
        let replicas = c.options.get("replicas").and_then(toml::Value::as_array);
        for r in replicas.into_iter().flatten() {
            if r.get("password_file").is_some() {
                return Err(Failure::bad_input(format!(
                    "contender `{}` has a replica that reads its password from a file, which the pods do not have: use password_env, and --secret",
                    c.name
                )));
            }
            if let Some(var) = r.get("password_env").and_then(toml::Value::as_str) {
                envs.push(var.to_string());
            }
        }
    }
    envs.sort();
    envs.dedup();
    Ok(envs)
}
