//! JWT signatures checked by `ring` (already in the build for rustls) through `jsonwebtoken`'s
//! `CryptoProvider`, instead of its RustCrypto backend: that backend alone added 27 crates (rsa,
//! crypto-bigint, p256, p384, ed25519-dalek, a second sha2/digest...) to every build.
//!
//! Verification covers the algorithms `auth` accepts (RS*, PS*, ES256, ES384, EdDSA) and HS* for
//! completeness; RSA keys must have 2048 to 8192 bits (ring's bounds: shorter keys are refused,
//! as they should be). Signing, which the server never does, covers what tests need to make
//! tokens: EdDSA from a PKCS#8 key, and HS*. Everything else is an `InvalidAlgorithm` error,
//! never a panic. `install` is called before the first token is checked or made.

use std::sync::Once;

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature;
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature::{self as sig, UnparsedPublicKey};
use ring::{digest, hmac};

/// Makes `ring` the process's JWT crypto provider (once; a provider installed before is kept).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = CryptoProvider::install_default(&PROVIDER);
    });
}

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| Err(ErrorKind::InvalidAlgorithm.into()),
        rsa_pub_components_from_public_key: |_| Err(ErrorKind::InvalidAlgorithm.into()),
        ec_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidAlgorithm.into()),
        ed_pub_components_from_private_key: ed_public_key,
        compute_digest,
    },
};

enum Check {
    /// A public key checked by one of ring's algorithms (EC points, Ed25519 keys, RSA DER).
    Public(&'static dyn sig::VerificationAlgorithm, Vec<u8>),
    /// An RSA key given as its modulus and exponent (a JWK).
    Rsa(&'static sig::RsaParameters, Vec<u8>, Vec<u8>),
    Hmac(hmac::Key),
}

struct Verifier {
    algorithm: Algorithm,
    check: Check,
}

impl signature::Verifier<Vec<u8>> for Verifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let ok = match &self.check {
            Check::Public(alg, key) => UnparsedPublicKey::new(*alg, key)
                .verify(msg, signature)
                .is_ok(),
            Check::Rsa(params, n, e) => sig::RsaPublicKeyComponents { n, e }
                .verify(params, msg, signature)
                .is_ok(),
            Check::Hmac(key) => hmac::verify(key, msg, signature).is_ok(),
        };
        if ok {
            Ok(())
        } else {
            Err(signature::Error::new())
        }
    }
}

impl JwtVerifier for Verifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

fn verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    use Algorithm as A;
    // A key is used only with its own family's algorithms: an EC or RSA public key is never an
    // HMAC secret (the algorithm-confusion attack), whatever the token's header says.
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    let rsa: Option<(
        &'static dyn sig::VerificationAlgorithm,
        &'static sig::RsaParameters,
    )> = match algorithm {
        A::RS256 => Some((
            &sig::RSA_PKCS1_2048_8192_SHA256,
            &sig::RSA_PKCS1_2048_8192_SHA256,
        )),
        A::RS384 => Some((
            &sig::RSA_PKCS1_2048_8192_SHA384,
            &sig::RSA_PKCS1_2048_8192_SHA384,
        )),
        A::RS512 => Some((
            &sig::RSA_PKCS1_2048_8192_SHA512,
            &sig::RSA_PKCS1_2048_8192_SHA512,
        )),
        A::PS256 => Some((
            &sig::RSA_PSS_2048_8192_SHA256,
            &sig::RSA_PSS_2048_8192_SHA256,
        )),
        A::PS384 => Some((
            &sig::RSA_PSS_2048_8192_SHA384,
            &sig::RSA_PSS_2048_8192_SHA384,
        )),
        A::PS512 => Some((
            &sig::RSA_PSS_2048_8192_SHA512,
            &sig::RSA_PSS_2048_8192_SHA512,
        )),
        _ => None,
    };
    let check = if let Some((der_alg, params)) = rsa {
        match key.kind() {
            DecodingKeyKind::RsaModulusExponent { n, e } => {
                Check::Rsa(params, n.clone(), e.clone())
            }
            DecodingKeyKind::SecretOrDer(der) => Check::Public(der_alg, der.clone()),
        }
    } else {
        let public = |alg: &'static dyn sig::VerificationAlgorithm| -> Result<Check> {
            Ok(Check::Public(alg, key.try_get_as_bytes()?.to_vec()))
        };
        match algorithm {
            A::ES256 => public(&sig::ECDSA_P256_SHA256_FIXED)?,
            A::ES384 => public(&sig::ECDSA_P384_SHA384_FIXED)?,
            A::EdDSA => public(&sig::ED25519)?,
            A::HS256 => Check::Hmac(hmac::Key::new(hmac::HMAC_SHA256, key.try_get_as_bytes()?)),
            A::HS384 => Check::Hmac(hmac::Key::new(hmac::HMAC_SHA384, key.try_get_as_bytes()?)),
            A::HS512 => Check::Hmac(hmac::Key::new(hmac::HMAC_SHA512, key.try_get_as_bytes()?)),
            _ => return Err(ErrorKind::InvalidAlgorithm.into()),
        }
    };
    Ok(Box::new(Verifier {
        algorithm: *algorithm,
        check,
    }))
}

enum Sign {
    Ed25519(sig::Ed25519KeyPair),
    Hmac(hmac::Key),
}

struct Signer {
    algorithm: Algorithm,
    key: Sign,
}

impl signature::Signer<Vec<u8>> for Signer {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        Ok(match &self.key {
            Sign::Ed25519(pair) => pair.sign(msg).as_ref().to_vec(),
            Sign::Hmac(key) => hmac::sign(key, msg).as_ref().to_vec(),
        })
    }
}

impl JwtSigner for Signer {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

fn signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    let hmac_key = |alg| Sign::Hmac(hmac::Key::new(alg, key.as_bytes()));
    let key = match algorithm {
        Algorithm::EdDSA => Sign::Ed25519(
            sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(key.as_bytes())
                .map_err(|_| Error::from(ErrorKind::InvalidEddsaKey))?,
        ),
        Algorithm::HS256 => hmac_key(hmac::HMAC_SHA256),
        Algorithm::HS384 => hmac_key(hmac::HMAC_SHA384),
        Algorithm::HS512 => hmac_key(hmac::HMAC_SHA512),
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(Box::new(Signer {
        algorithm: *algorithm,
        key,
    }))
}

fn ed_public_key(pkcs8: &[u8], curve: &EllipticCurve) -> Result<Vec<u8>> {
    use ring::signature::KeyPair as _;
    match curve {
        EllipticCurve::Ed25519 => Ok(sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8)
            .map_err(|_| Error::from(ErrorKind::InvalidEddsaKey))?
            .public_key()
            .as_ref()
            .to_vec()),
        _ => Err(ErrorKind::InvalidAlgorithm.into()),
    }
}

fn compute_digest(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let alg = match hash {
        ThumbprintHash::SHA256 => &digest::SHA256,
        ThumbprintHash::SHA384 => &digest::SHA384,
        ThumbprintHash::SHA512 => &digest::SHA512,
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(digest::digest(alg, data).as_ref().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{Header, Validation, decode, encode};
    use ring::rand::SystemRandom;
    use ring::signature::KeyPair as _;
    use serde_json::{Value, json};

    fn claims() -> Value {
        json!({"sub": "a", "exp": 4_000_000_000u64})
    }

    #[test]
    fn ed25519_tokens_verify_and_a_changed_byte_does_not() {
        install();
        let pkcs8 = sig::Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("key");
        let pair = sig::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("pair");
        let token = encode(
            &Header::new(Algorithm::EdDSA),
            &claims(),
            &EncodingKey::from_ed_der(pkcs8.as_ref()),
        )
        .expect("sign");
        let x = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            pair.public_key().as_ref(),
        );
        let key = DecodingKey::from_ed_components(&x).expect("key");
        let validation = Validation::new(Algorithm::EdDSA);
        assert!(decode::<Value>(&token, &key, &validation).is_ok());
        let mut bad = token.into_bytes();
        let last = bad.len() - 2;
        bad[last] = if bad[last] == b'A' { b'B' } else { b'A' };
        let bad = String::from_utf8(bad).expect("ascii");
        let err = decode::<Value>(&bad, &key, &validation).expect_err("a changed signature");
        assert_eq!(err.kind(), &ErrorKind::InvalidSignature);
    }

    #[test]
    fn es256_tokens_verify_against_their_key_only() {
        install();
        let rng = SystemRandom::new();
        let alg = &sig::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = sig::EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("key");
        let pair = sig::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("pair");
        let header = r#"{"alg":"ES256","typ":"JWT"}"#;
        let b64 =
            |b: &[u8]| base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, b);
        let message = format!(
            "{}.{}",
            b64(header.as_bytes()),
            b64(claims().to_string().as_bytes())
        );
        let signature = pair.sign(&rng, message.as_bytes()).expect("sign");
        let token = format!("{message}.{}", b64(signature.as_ref()));
        let point = pair.public_key().as_ref();
        let key =
            DecodingKey::from_ec_components(&b64(&point[1..33]), &b64(&point[33..])).expect("key");
        let validation = Validation::new(Algorithm::ES256);
        assert!(decode::<Value>(&token, &key, &validation).is_ok());
        let other = sig::EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("key");
        let other = sig::EcdsaKeyPair::from_pkcs8(alg, other.as_ref(), &rng).expect("pair");
        let point = other.public_key().as_ref();
        let wrong =
            DecodingKey::from_ec_components(&b64(&point[1..33]), &b64(&point[33..])).expect("key");
        assert!(decode::<Value>(&token, &wrong, &validation).is_err());
    }

    #[test]
    fn a_public_key_is_never_an_hmac_secret() {
        install();
        let point = [4u8; 65];
        let b64 =
            |b: &[u8]| base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, b);
        let key =
            DecodingKey::from_ec_components(&b64(&point[1..33]), &b64(&point[33..])).expect("key");
        assert!(verifier(&Algorithm::HS256, &key).is_err());
        let forged = encode(
            &Header::new(Algorithm::HS256),
            &claims(),
            &EncodingKey::from_secret(&point).expect("key"),
        )
        .expect("sign");
        let mut validation = Validation::new(Algorithm::ES256);
        validation.algorithms = vec![Algorithm::ES256, Algorithm::HS256];
        assert!(decode::<Value>(&forged, &key, &validation).is_err());
    }

    #[test]
    fn hmac_round_trips_and_unsupported_signing_is_an_error_not_a_panic() {
        install();
        let token = encode(
            &Header::new(Algorithm::HS256),
            &claims(),
            &EncodingKey::from_secret(b"secret").expect("key"),
        )
        .expect("sign");
        let validation = Validation::new(Algorithm::HS256);
        let key = DecodingKey::from_secret(b"secret").expect("key");
        assert!(decode::<Value>(&token, &key, &validation).is_ok());
        let other = DecodingKey::from_secret(b"other").expect("key");
        assert!(decode::<Value>(&token, &other, &validation).is_err());
        let rsa = encode(
            &Header::new(Algorithm::RS256),
            &claims(),
            &EncodingKey::from_rsa_der(b"not a key"),
        );
        assert!(rsa.is_err());
    }
}
