//! The resources: each conclave file of the catalog (`conclave://conclaves/{id}`)
//! and each finished review's Markdown report (`conclave://runs/{run}/report.md`),
//! listed, described by templates, and read. A URI names an id, never a path: an id
//! that is not one (`..`, `/`, anything but the id characters) is refused before any
//! file or the store is read.

use conclave_catalog::is_valid_id;
use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};

use super::answers::MAX_ANSWER_CHARS;
use super::context::McpContext;
use crate::api::blocking::blocking;

const CONCLAVES: &str = "conclave://conclaves/";
const RUNS: &str = "conclave://runs/";
const REPORT: &str = "/report.md";

/// How many recent runs the listing looks at for reports.
const LISTED_RUNS: usize = 20;

/// Every conclave file, and the reports of the most recent reviews.
pub async fn list(context: &McpContext) -> Result<ListResourcesResult, ErrorData> {
    let (listing, workspace) = (context.state.listing.clone(), context.state.workspace.clone());
    let summaries = blocking(move || listing.list(&workspace)).await.map_err(internal)?;
    let mut resources: Vec<Resource> = summaries
        .into_iter()
        .map(|c| {
            let about = c.description.clone().unwrap_or_else(|| format!("the conclave file {}.conclave.json", c.id));
            Resource::new(format!("{CONCLAVES}{}", c.id), c.name.unwrap_or_else(|| c.id.clone()))
                .with_description(about)
                .with_mime_type("application/json")
        })
        .collect();
    let store = context.state.store();
    for run in store.list_runs(LISTED_RUNS).await.map_err(internal)?.into_iter().filter(|r| r.status.is_terminal()) {
        if store.get_report(&run.id, "markdown").await.map_err(internal)?.is_some() {
            resources.push(
                Resource::new(format!("{RUNS}{}{REPORT}", run.id), format!("review {}", run.id))
                    .with_description(format!("the Markdown report of review run {} ({})", run.id, run.conclave_id))
                    .with_mime_type("text/markdown"),
            );
        }
    }
    Ok(ListResourcesResult::with_all_items(resources))
}

/// The two URI templates.
pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(format!("{CONCLAVES}{{id}}"), "conclave file")
            .with_description("A conclave file of the catalog, by id (list_conclaves lists the ids)")
            .with_mime_type("application/json"),
        ResourceTemplate::new(format!("{RUNS}{{run}}{REPORT}"), "review report")
            .with_description("The Markdown report of a finished review run, by run id")
            .with_mime_type("text/markdown"),
    ])
}

/// Reads one resource.
pub async fn read(context: &McpContext, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    if let Some(id) = uri.strip_prefix(CONCLAVES) {
        if !is_valid_id(id) {
            return Err(ErrorData::invalid_params(
                format!(
                    "`{id}` is not a conclave id (lowercase letters, digits, `-` and `_`); list_conclaves lists them"
                ),
                None,
            ));
        }
        let (files, name) = (context.state.files.clone(), id.to_string());
        let read = blocking(move || files.read(&name)).await.map_err(internal)?;
        let bytes = read.map_err(|_| ErrorData::resource_not_found(format!("no conclave `{id}`"), None))?.bytes;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        return Ok(ReadResourceResult::new(vec![capped(text, uri).with_mime_type("application/json")]));
    }
    let Some(run) = uri.strip_prefix(RUNS).and_then(|rest| rest.strip_suffix(REPORT)) else {
        return Err(ErrorData::resource_not_found(
            format!(
                "no resource `{uri}`: this server has conclave://conclaves/{{id}} and conclave://runs/{{run}}/report.md"
            ),
            None,
        ));
    };
    if run.is_empty() || !run.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(ErrorData::invalid_params(format!("`{run}` is not a run id; list_runs lists them"), None));
    }
    let report = context.state.store().get_report(run, "markdown").await.map_err(internal)?;
    let text = report.ok_or_else(|| {
        ErrorData::resource_not_found(
            format!("run `{run}` has no report (reports exist for finished review runs)"),
            None,
        )
    })?;
    Ok(ReadResourceResult::new(vec![capped(text, uri).with_mime_type("text/markdown")]))
}

/// The text of a resource, cut at the answer cap with a line saying so.
fn capped(mut text: String, uri: &str) -> ResourceContents {
    if text.len() > MAX_ANSWER_CHARS {
        let mut end = MAX_ANSWER_CHARS;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let total = text.len();
        text.truncate(end);
        text.push_str(&format!(
            "\n\n… [cut at {end} of {total} characters; the whole report is `conclave runs report`]\n"
        ));
    }
    ResourceContents::text(text, uri)
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}
