//! stub
pub(crate) async fn run(_json: bool) -> anyhow::Result<()> {
    Ok(())
}
