//! `--bootstrap-ca-cert` / `SSL:bootstrap_ca_cert`: the CA certificate is taken
//! from the first server that sends it, written to the CA file, and every later
//! connection is verified against it.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use tokio_rustls::rustls::pki_types::CertificateDer;

use super::verify::chains_to;
use super::TlsError;

/// Writes the last certificate of the server's `chain` to `ca_cert` if the chain
/// leads to it. A file that appeared meanwhile (another process bootstrapped) is
/// left as it is.
pub(crate) fn write_bootstrapped_ca(
    chain: &[CertificateDer<'_>],
    ca_cert: &Path,
) -> Result<(), TlsError> {
    let fail = |reason: String| TlsError::Bootstrap {
        path: ca_cert.to_owned(),
        reason,
    };
    let (end_entity, rest) = chain
        .split_first()
        .ok_or_else(|| fail("the server presented no certificate".into()))?;
    let Some(ca) = rest.last() else {
        return Err(fail(
            "the server sent only its own certificate, not its CA's".into(),
        ));
    };
    chains_to(ca, end_entity, rest).map_err(|e| {
        fail(format!(
            "the server's certificate does not chain to the last one it sent: {e}"
        ))
    })?;
    let text = pem::encode(&pem::Pem::new("CERTIFICATE", ca.as_ref().to_vec()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .open(ca_cert);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(fail(e.to_string())),
    };
    if let Err(e) = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
    {
        let _ = std::fs::remove_file(ca_cert);
        return Err(fail(e.to_string()));
    }
    Ok(())
}
