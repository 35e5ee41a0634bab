//! stub
pub(crate) async fn run(
    _s: &crate::settings::Settings,
    _h: Option<std::net::SocketAddr>,
    _yes: bool,
) -> anyhow::Result<()> {
    Ok(())
}
