//! Who may command a review: on GitHub, a collaborator with the write, maintain or
//! admin role; on GitLab, a member with the Developer role or above. Asked through
//! the same checks as dismissals by reply (`post::github`, `post::gitlab`).

use super::error::AuthError;
use super::repo::RepoToken;
use crate::post::{Forge, github, gitlab};

/// Who wrote a command, as the forge's event names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commenter {
    /// A GitHub login.
    Login(String),
    /// A GitLab user id.
    UserId(u64),
}

/// Whether `who` may command a review of the token's repository.
pub async fn may_command(token: &RepoToken, who: &Commenter) -> Result<bool, AuthError> {
    let context = format!("checking who may command a review of {}", token.repo.path);
    let api = token.api().map_err(|source| AuthError::Forge { context: context.clone(), source })?;
    let answer = match (token.repo.forge, who) {
        (Forge::Github, Commenter::Login(login)) => github::has_write_access(&api, &token.repo.path, login).await,
        (Forge::Gitlab, Commenter::UserId(user)) => gitlab::has_developer_access(&api, &token.repo.path, *user).await,
        (forge, who) => {
            return Err(AuthError::Config(format!(
                "{who:?} is not a user of {forge:?}: the event names a user another way"
            )));
        }
    };
    answer.map_err(|source| AuthError::Forge { context, source })
}
