//! An operation of several statements on a thread shared with other clients: its
//! statements drawn up front, in the order a thread of its own would run them, then sent one
//! at a time as each answer arrives (`runner::Overlapped`, `engine::Overlap`).

use crate::engine::{self, Overlap, StmtId, Value};

/// How a planned statement goes to the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Request {
    /// A prepared statement, with the parameters planned beside it.
    Stmt(StmtId),
    /// SQL text, for a statement the engine would not prepare (MySQL's `BEGIN`).
    Text(&'static str),
}

struct Planned {
    request: Request,
    params: Vec<Value>,
}

/// One operation's statements and how far its answers have come. The parameter buffers are
/// kept from one operation to the next, so planning allocates only for text values.
#[derive(Default)]
pub struct Flight {
    planned: Vec<Planned>,
    /// Statements planned for the operation now (the first `len` of `planned`).
    len: usize,
    /// The statement in flight: those before it are answered.
    next: usize,
    recording: bool,
}

impl Flight {
    /// Whether statements are being planned rather than run.
    pub fn recording(&self) -> bool {
        self.recording
    }

    /// Plan a new operation: what runs until [`planned`](Self::planned) is [`push`](Self::push)ed.
    pub fn plan(&mut self) {
        self.len = 0;
        self.next = 0;
        self.recording = true;
    }

    /// The operation's next statement.
    pub fn push(&mut self, request: Request, params: &[Value]) {
        if let Some(p) = self.planned.get_mut(self.len) {
            p.request = request;
            p.params.clear();
            p.params.extend_from_slice(params);
        } else {
            self.planned.push(Planned {
                request,
                params: params.to_vec(),
            });
        }
        self.len += 1;
    }

    /// The statements planned for the operation.
    pub fn statements(&self) -> u64 {
        self.len as u64
    }

    /// Planning is over; the statements planned are the operation's.
    pub fn planned(&mut self) {
        self.recording = false;
    }

    /// Send the statement in flight: the first, once planned.
    pub fn send_next(&self, o: &mut dyn Overlap) -> engine::Result<()> {
        let p = self.planned[..self.len]
            .get(self.next)
            .ok_or_else(|| engine::EngineError::new("client", "an operation of no statements"))?;
        match p.request {
            Request::Stmt(id) => o.send_run(id, &p.params),
            Request::Text(sql) => o.send_text(sql),
        }
    }

    /// Read what has arrived for the statement in flight, never waiting. `None` while its
    /// answer is not whole, or once it is and the next statement has been sent; the first
    /// error; `Ok` once the last statement is answered.
    pub fn advance(&mut self, o: &mut dyn Overlap) -> Option<engine::Result<()>> {
        if let Err(e) = o.try_finish()? {
            return Some(Err(e));
        }
        self.next += 1;
        if self.next >= self.len {
            return Some(Ok(()));
        }
        self.send_next(o).err().map(Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineError, Result};

    /// Records what was sent; answers each request when told to.
    #[derive(Default)]
    struct Wire {
        sent: Vec<String>,
        answered: usize,
        fail_at: Option<usize>,
    }

    impl Overlap for Wire {
        fn fd(&self) -> std::os::fd::RawFd {
            -1
        }
        fn send_run(&mut self, stmt: StmtId, params: &[Value]) -> Result<()> {
            self.sent.push(format!("{} {params:?}", stmt.0));
            Ok(())
        }
        fn send_text(&mut self, sql: &str) -> Result<()> {
            self.sent.push(sql.to_string());
            Ok(())
        }
        fn try_finish(&mut self) -> Option<Result<u64>> {
            if self.answered == self.sent.len() {
                return None; // nothing in flight has its answer yet
            }
            self.answered += 1;
            Some(match self.fail_at {
                Some(at) if at + 1 == self.answered => Err(EngineError::new("deadlock", "no")),
                _ => Ok(1),
            })
        }
    }

    fn plan_three(f: &mut Flight) {
        f.plan();
        f.push(Request::Text("BEGIN"), &[]);
        f.push(Request::Stmt(StmtId(4)), &[Value::Int(7)]);
        f.push(Request::Stmt(StmtId(5)), &[Value::Int(8), Value::Int(9)]);
        f.planned();
    }

    #[test]
    fn statements_go_one_at_a_time_each_after_the_last_ones_answer() {
        let mut f = Flight::default();
        let mut w = Wire::default();
        plan_three(&mut f);
        f.send_next(&mut w).unwrap();
        assert_eq!(w.sent, ["BEGIN"]);
        assert!(f.advance(&mut w).is_none()); // BEGIN answered, the SELECT sent
        assert_eq!(w.sent.len(), 2);
        assert!(f.advance(&mut w).is_none());
        assert_eq!(w.sent[2], "5 [Int(8), Int(9)]");
        assert!(matches!(f.advance(&mut w), Some(Ok(()))));
        assert_eq!(f.statements(), 3);
        // The buffers are reused: a shorter operation sends only its own statements.
        f.plan();
        f.push(Request::Stmt(StmtId(1)), &[]);
        f.planned();
        f.send_next(&mut w).unwrap();
        assert!(matches!(f.advance(&mut w), Some(Ok(()))));
        assert_eq!(w.sent.len(), 4);
    }

    #[test]
    fn the_first_error_ends_the_operation_and_nothing_more_is_sent() {
        let mut f = Flight::default();
        let mut w = Wire {
            fail_at: Some(1),
            ..Default::default()
        };
        plan_three(&mut f);
        f.send_next(&mut w).unwrap();
        assert!(f.advance(&mut w).is_none());
        assert!(matches!(f.advance(&mut w), Some(Err(e)) if e.kind == "deadlock"));
        assert_eq!(w.sent.len(), 2);
    }
}
