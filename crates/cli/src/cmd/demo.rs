//! stub
pub(crate) async fn run(_s: &crate::settings::Settings, _yes: bool) -> anyhow::Result<()> {
    Ok(())
}
