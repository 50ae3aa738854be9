//! The open-files limit of dbduel's process, raised for a run's clients as far as the
//! system allows (each client holds a socket, or an embedded database's file and log).

/// Descriptors a run needs besides its clients: dataset files, logs, the sampler's reads
/// of `/proc`, admin connections.
const BASE_FILES: u64 = 256;

/// Open files a run needs whose clients hold `client_files` descriptors in all at once.
pub fn needed(client_files: u64) -> u64 {
    client_files.saturating_add(BASE_FILES)
}

fn nr_open() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Raise the soft limit on open files to at least `need` if the hard limit allows, and the
/// hard limit too when the process may (root, up to `fs.nr_open`). Returns the soft limit
/// now in force.
pub fn raise_to(need: u64) -> u64 {
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 0;
    }
    let (soft, hard) = (rl.rlim_cur as u64, rl.rlim_max as u64);
    if soft >= need {
        return soft;
    }
    if hard < need {
        let nr_open = nr_open().unwrap_or(hard);
        let want = libc::rlimit {
            rlim_cur: need.min(nr_open) as libc::rlim_t,
            rlim_max: need.min(nr_open).max(hard) as libc::rlim_t,
        };
        // Allowed only with CAP_SYS_RESOURCE; otherwise fall through to the hard limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            return want.rlim_cur;
        }
    }
    let want = libc::rlimit {
        rlim_cur: need.min(hard) as libc::rlim_t,
        rlim_max: rl.rlim_max,
    };
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        want.rlim_cur as u64
    } else {
        soft
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_raised_within_what_is_allowed() {
        let before = raise_to(0);
        assert!(before > 0);
        // Asking for what is already there changes nothing.
        assert_eq!(raise_to(before), before);
        // Asking for a little more gets it when the hard limit allows, else the hard limit.
        let after = raise_to(before + 16);
        assert!(after >= before);
        assert!(needed(20_000) > 20_000);
    }
}
