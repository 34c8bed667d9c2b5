//! `embed::validate`, the check the store runs before writing vectors.

use folio::embed::{default_embedder, validate, Embedder, VectorError};

#[test]
fn accepts_whole_finite_rows() {
    assert_eq!(validate(&[], 3), Ok(()));
    assert_eq!(validate(&[0.0, 1.0, -2.5, 3.0, 4.0, 5.0], 3), Ok(()));
}

#[test]
fn refuses_a_partial_row() {
    assert_eq!(
        validate(&[0.0; 7], 3),
        Err(VectorError::Length { len: 7, dim: 3 })
    );
}

#[test]
fn refuses_a_zero_dimension() {
    assert_eq!(validate(&[], 0), Err(VectorError::ZeroDimension));
}

#[test]
fn locates_the_first_non_finite_value() {
    let mut v = vec![0.5; 12];
    v[7] = f32::INFINITY;
    v[10] = f32::NAN;
    assert_eq!(
        validate(&v, 4),
        Err(VectorError::NotFinite {
            row: 1,
            col: 3,
            value: f32::INFINITY
        })
    );
    let err = validate(&[1.0, f32::NAN], 2).unwrap_err();
    assert!(matches!(err, VectorError::NotFinite { row: 0, col: 1, value } if value.is_nan()));
    assert_eq!(
        err.to_string(),
        "vector 0 has a non-finite value NaN at column 1"
    );
}

#[test]
fn the_default_embedder_passes_its_own_check() {
    let e = default_embedder();
    assert_eq!(e.name(), "folio-hash-v1");
    let texts = ["vacation policy", "", "北京", "!!!"];
    let vectors = e.embed(&texts).expect("hash embedding cannot fail");
    assert_eq!(vectors.len(), texts.len() * e.dimension());
    assert_eq!(validate(&vectors, e.dimension()), Ok(()));
}
