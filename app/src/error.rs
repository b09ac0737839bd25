//! Why an app could not be set up or could not make a transition ([`AppError`]).

/// Why an app operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A transition that needs swapping, on an app without it.
    #[error("swapping is not enabled")]
    SwapOff,
    /// A background, foreground, save or reclaim transition under the page-swap baseline,
    /// which has none (pages go out under pressure only).
    #[error("the page-swap baseline has no memory transitions")]
    PageSwap,
    /// [`App::enable_swap`](crate::App::enable_swap) on an app that already swaps.
    #[error("swapping is already enabled")]
    SwapAlreadyOn,
    /// The app's heap already answers to a memory budget.
    #[error("a memory budget is already set")]
    BudgetAlreadySet,
    /// The swap file and reclaim table could not be set up.
    #[error(transparent)]
    Attach(#[from] marvin_swap::AttachError),
    /// The swap file failed (compaction).
    #[error(transparent)]
    Swap(#[from] marvin_swap::SwapError),
    /// Objects could not be stubbed.
    #[error(transparent)]
    Stub(#[from] marvin_runtime::StubError),
    /// Objects could not be read back when the app came to the foreground.
    #[error("restore failed: {0}")]
    Restore(String),
    /// [`App::on_frame`](crate::App::on_frame) on an app that already has a frame hook.
    #[error("a frame hook is already set")]
    FrameHookAlreadySet,
    /// The heap or a thread could not be set up.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
