//! The tools as the client sees them: names, descriptions a model can act on, input
//! and output schemas (from `args.rs` and `answers.rs`), each a thin call into the
//! module that does the work. A refusal is a tool error carrying the message the
//! CLI gives; it never closes the connection.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::RequestMetaObject;
use rmcp::{Json, Peer, RoleServer, tool, tool_router};

use super::answers::{ApprovalAnswer, ConclaveList, ReviewAnswer, RunAnswer, RunList, ValidationAnswer};
use super::args::{
    ApproveArgs, GetReviewArgs, ListRunsArgs, NoArgs, ReviewArgs, RunArgs, RunConclaveArgs, ValidateArgs,
};
use super::context::Refusal;
use super::progress::Reporter;
use super::server::ConclaveMcp;
use super::{catalog, review, runs};

fn reporter(meta: &RequestMetaObject, peer: Peer<RoleServer>) -> Reporter {
    Reporter { peer, token: meta.get_progress_token() }
}

#[tool_router(router = tool_router, vis = "pub(super)")]
impl ConclaveMcp {
    #[tool(
        name = "review",
        description = "Review a git change with Conclave's specialist reviewers and Writer, as `conclave review` does. \
            `repository` is the git repository (stdio: default the working directory; HTTP: required, under the \
            server's allowed roots); `base` reviews BASE...HEAD (else the working tree against HEAD); `since` reviews \
            only what is new since an earlier review; `conclave` picks the review conclave; `provider`/`model` run every \
            agent on one provider. Waits for the review (with a progress notification per node state when you send a \
            progress token) and returns the run id, status, totals and the first page of findings (severity, file, \
            line, description, fingerprint). Findings are paged: when `next_cursor` is present, call `get_review` with \
            the run id and that cursor for the next page. `wait: false` returns the run id at once."
    )]
    async fn review(
        &self,
        Parameters(args): Parameters<ReviewArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<Json<ReviewAnswer>, Refusal> {
        review::review(&self.context, args, &reporter(&meta, peer)).await.map(Json)
    }

    #[tool(
        name = "get_review",
        description = "A review's findings, one page at a time (at most 50 findings, and never more than fits the \
            answer). Give `run` (the id `review` or `list_runs` returned); for the next page pass the previous \
            answer's `next_cursor` as `cursor` (no cursor: the first page; no `next_cursor` in the answer: that was \
            the last page). `detail: \"full\"` adds each finding's evidence, anchor, support and more. While the review \
            runs, the answer has its status and no findings.",
        annotations(read_only_hint = true)
    )]
    async fn get_review(&self, Parameters(args): Parameters<GetReviewArgs>) -> Result<Json<ReviewAnswer>, Refusal> {
        review::get_review(&self.context, args).await.map(Json)
    }

    #[tool(
        name = "run_conclave",
        description = "Run a conclave (an agent workflow of the catalog; `list_conclaves` lists the ids) with an \
            `input` (any JSON). Waits for the run (progress per node state when you send a progress token) and \
            returns its status, each node's state and the output nodes' outputs (cut to fit; `get_run` again shows \
            the same). `wait: false` returns the run id at once. A run may stop at an approval node: status \
            `waiting`; decide with `approve`."
    )]
    async fn run_conclave(
        &self,
        Parameters(args): Parameters<RunConclaveArgs>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<Json<RunAnswer>, Refusal> {
        runs::run_conclave(&self.context, args, &reporter(&meta, peer)).await.map(Json)
    }

    #[tool(
        name = "get_run",
        description = "One run: its status, each node's state and error, and the output nodes' outputs (cut to \
            fit the answer). For a review's findings use `get_review`.",
        annotations(read_only_hint = true)
    )]
    async fn get_run(&self, Parameters(args): Parameters<RunArgs>) -> Result<Json<RunAnswer>, Refusal> {
        runs::get_run(&self.context, args).await.map(Json)
    }

    #[tool(
        name = "list_runs",
        description = "The most recent runs, newest first (`limit`, 1 to 100, default 20): id, conclave, status.",
        annotations(read_only_hint = true)
    )]
    async fn list_runs(&self, Parameters(args): Parameters<ListRunsArgs>) -> Result<Json<RunList>, Refusal> {
        runs::list_runs(&self.context, args).await.map(Json)
    }

    #[tool(
        name = "list_conclaves",
        description = "The conclaves of the catalog: id, name, description, node count, errors, and the \
            `conclave://conclaves/{id}` resource with each file.",
        annotations(read_only_hint = true)
    )]
    async fn list_conclaves(&self, Parameters(_): Parameters<NoArgs>) -> Result<Json<ConclaveList>, Refusal> {
        catalog::list_conclaves(&self.context).await.map(Json)
    }

    #[tool(
        name = "approve",
        description = "Decide at an approval node where a run waits (status `waiting`; `get_run` shows the node \
            in state `waiting`): `decision` is `approve` (the run goes on) or `reject` (it stops there cleanly), with \
            an optional `comment`. The run is taken up again at once."
    )]
    async fn approve(&self, Parameters(args): Parameters<ApproveArgs>) -> Result<Json<ApprovalAnswer>, Refusal> {
        runs::approve(&self.context, args).await.map(Json)
    }

    #[tool(
        name = "validate_conclave",
        description = "Check an unsaved conclave document (a JSON object in the conclave file format) without \
            running it, as `conclave validate` does: every diagnostic with its node or edge and JSON pointer, \
            error and warning counts, and the agents whose output is findings-shaped.",
        annotations(read_only_hint = true)
    )]
    async fn validate_conclave(
        &self,
        Parameters(args): Parameters<ValidateArgs>,
    ) -> Result<Json<ValidationAnswer>, Refusal> {
        catalog::validate_conclave(&self.context, args).await.map(Json)
    }
}
