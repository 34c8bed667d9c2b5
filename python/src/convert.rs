//! Values between Python and folio: plain data through serde (metadata, receipts, reports),
//! vectors as numpy float32 arrays (never cast silently), and the small enums by name.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use serde_json::Value;

use crate::errors::invalid;

/// A Python value of plain data (None, bool, int, float, str, list, tuple, dict with str
/// keys) as JSON; anything else is refused with the path to it.
pub fn to_json(value: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    if value.is_none() {
        Ok(Value::Null)
    } else if let Ok(b) = value.cast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if value.is_instance_of::<PyInt>() {
        match value.extract::<i64>() {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => Err(invalid(format!("{path}: integer out of the 64-bit range"))),
        }
    } else if let Ok(f) = value.cast::<PyFloat>() {
        serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| invalid(format!("{path}: {} is not a finite number", f.value())))
    } else if let Ok(s) = value.cast::<PyString>() {
        Ok(Value::String(s.to_cow()?.into_owned()))
    } else if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in value.try_iter()?.enumerate() {
            items.push(to_json(&item?, &format!("{path}[{i}]"))?);
        }
        Ok(Value::Array(items))
    } else if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in dict.iter() {
            let key = k
                .cast::<PyString>()
                .map_err(|_| invalid(format!("{path}: keys must be str")))?
                .to_cow()?
                .into_owned();
            let item = to_json(&v, &format!("{path}[{key:?}]"))?;
            map.insert(key, item);
        }
        Ok(Value::Object(map))
    } else {
        Err(invalid(format!(
            "{path}: {} is not a str, int, float, bool, list or dict",
            value.get_type().name()?
        )))
    }
}

/// JSON as Python objects (dicts, lists, str, int, float, bool, None).
pub fn from_json<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    match value {
        Value::Null => Ok(py.None().into_bound(py)),
        Value::Bool(b) => b.into_bound_py_any(py),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_bound_py_any(py),
            (None, Some(u)) => u.into_bound_py_any(py),
            _ => n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py),
        },
        Value::String(s) => s.into_bound_py_any(py),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(from_json(py, item)?)?;
            }
            Ok(list.into_any())
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, from_json(py, v)?)?;
            }
            Ok(dict.into_any())
        }
    }
}

/// Any serialisable folio value (receipts, versions, reports) as Python data.
pub fn to_py<'py>(py: Python<'py>, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value)
        .map_err(|e| crate::errors::Error::new_err(format!("cannot convert a result: {e}")))?;
    from_json(py, &json)
}

/// A value named in Python (`"markdown"`, `"section"`, …) as the folio enum of that serde name.
pub fn by_name<T: serde::de::DeserializeOwned>(
    name: &str,
    what: &str,
    allowed: &str,
) -> PyResult<T> {
    serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|_| invalid(format!("unknown {what} {name:?}; expected {allowed}")))
}

/// A numpy float32 array of `ndim` dimensions, copied out as one row-major vector, with its
/// shape. Other dtypes are refused rather than cast, so a float64 model output is never
/// rounded behind the caller's back.
pub fn f32_array(
    value: &Bound<'_, PyAny>,
    ndim: usize,
    what: &str,
) -> PyResult<(Vec<f32>, Vec<usize>)> {
    let array = value.cast::<PyArrayDyn<f32>>().map_err(|_| {
        let found = value
            .getattr("dtype")
            .and_then(|d| d.str().map(|s| s.to_string()))
            .map(|d| format!("a numpy array of dtype {d}"))
            .or_else(|_| value.get_type().name().map(|n| n.to_string()))
            .unwrap_or_else(|_| "another type".into());
        invalid(format!("{what} must be a numpy float32 array, not {found}"))
    })?;
    let shape = array.shape().to_vec();
    if shape.len() != ndim {
        return Err(invalid(format!(
            "{what} must have {ndim} dimension(s), not shape {shape:?}"
        )));
    }
    let read = array.readonly();
    // Contiguous arrays are read in place; strided views are gathered once.
    let values = match read.as_slice() {
        Ok(slice) => slice.to_vec(),
        Err(_) => read.as_array().iter().copied().collect(),
    };
    Ok((values, shape))
}
