//! Math functions from NVIDIA's libdevice (`__nv_*`), which the device
//! link (`fatlink device-link`) links into the program lazily: only what a
//! kernel calls ends up in it, and after optimization most are a few
//! instructions (`sqrtf` is `sqrt.rn.f32`, `fmaf` is `fma.rn.f32`, `expf`
//! is `ex2.approx.ftz.f32` with a scaling step). Every GPU has them; the
//! precision is CUDA's (docs/device-rust.md lists the flags that change
//! it: `--ftz`, `--no-prec-sqrt`, `--no-prec-div`).

extern "C" {
    fn __nv_sqrtf(x: f32) -> f32;
    fn __nv_rsqrtf(x: f32) -> f32;
    fn __nv_expf(x: f32) -> f32;
    fn __nv_exp2f(x: f32) -> f32;
    fn __nv_logf(x: f32) -> f32;
    fn __nv_log2f(x: f32) -> f32;
    fn __nv_powf(x: f32, y: f32) -> f32;
    fn __nv_sinf(x: f32) -> f32;
    fn __nv_cosf(x: f32) -> f32;
    fn __nv_tanf(x: f32) -> f32;
    fn __nv_tanhf(x: f32) -> f32;
    fn __nv_fabsf(x: f32) -> f32;
    fn __nv_floorf(x: f32) -> f32;
    fn __nv_ceilf(x: f32) -> f32;
    fn __nv_fminf(x: f32, y: f32) -> f32;
    fn __nv_fmaxf(x: f32, y: f32) -> f32;
    fn __nv_fmaf(x: f32, y: f32, z: f32) -> f32;
    fn __nv_sqrt(x: f64) -> f64;
    fn __nv_exp(x: f64) -> f64;
    fn __nv_log(x: f64) -> f64;
    fn __nv_sin(x: f64) -> f64;
    fn __nv_cos(x: f64) -> f64;
    fn __nv_pow(x: f64, y: f64) -> f64;
    fn __nv_fabs(x: f64) -> f64;
    fn __nv_fma(x: f64, y: f64, z: f64) -> f64;
}

macro_rules! libdevice {
    ($($(#[$doc:meta])* $name:ident($($a:ident),*) -> $t:ty => $nv:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name($($a: $t),*) -> $t {
            unsafe { $nv($($a),*) }
        }
    )*};
}

libdevice! {
    /// Square root, IEEE-rounded (`__nv_sqrtf`: `sqrt.rn.f32`).
    sqrtf(x) -> f32 => __nv_sqrtf;
    /// 1 / sqrt(x) (`__nv_rsqrtf`: `rsqrt.approx.f32`).
    rsqrtf(x) -> f32 => __nv_rsqrtf;
    /// e^x (`__nv_expf`: `ex2.approx`).
    expf(x) -> f32 => __nv_expf;
    /// 2^x (`__nv_exp2f`: `ex2.approx`).
    exp2f(x) -> f32 => __nv_exp2f;
    /// Natural logarithm (`__nv_logf`).
    logf(x) -> f32 => __nv_logf;
    /// Base-2 logarithm (`__nv_log2f`).
    log2f(x) -> f32 => __nv_log2f;
    /// x^y (`__nv_powf`).
    powf(x, y) -> f32 => __nv_powf;
    /// Sine (`__nv_sinf`).
    sinf(x) -> f32 => __nv_sinf;
    /// Cosine (`__nv_cosf`).
    cosf(x) -> f32 => __nv_cosf;
    /// Tangent (`__nv_tanf`).
    tanf(x) -> f32 => __nv_tanf;
    /// Hyperbolic tangent (`__nv_tanhf`).
    tanhf(x) -> f32 => __nv_tanhf;
    /// Absolute value (`__nv_fabsf`: `abs.f32`).
    fabsf(x) -> f32 => __nv_fabsf;
    /// Round down (`__nv_floorf`: `cvt.rmi.f32.f32`).
    floorf(x) -> f32 => __nv_floorf;
    /// Round up (`__nv_ceilf`: `cvt.rpi.f32.f32`).
    ceilf(x) -> f32 => __nv_ceilf;
    /// The smaller, ignoring NaN (`__nv_fminf`: `min.f32`).
    fminf(x, y) -> f32 => __nv_fminf;
    /// The larger, ignoring NaN (`__nv_fmaxf`: `max.f32`).
    fmaxf(x, y) -> f32 => __nv_fmaxf;
    /// x * y + z with one rounding (`__nv_fmaf`: `fma.rn.f32`).
    fmaf(x, y, z) -> f32 => __nv_fmaf;
    /// Square root, f64 (`__nv_sqrt`: `sqrt.rn.f64`).
    sqrt(x) -> f64 => __nv_sqrt;
    /// e^x, f64 (`__nv_exp`).
    exp(x) -> f64 => __nv_exp;
    /// Natural logarithm, f64 (`__nv_log`).
    log(x) -> f64 => __nv_log;
    /// Sine, f64 (`__nv_sin`).
    sin(x) -> f64 => __nv_sin;
    /// Cosine, f64 (`__nv_cos`).
    cos(x) -> f64 => __nv_cos;
    /// x^y, f64 (`__nv_pow`).
    pow(x, y) -> f64 => __nv_pow;
    /// Absolute value, f64 (`__nv_fabs`: `abs.f64`).
    fabs(x) -> f64 => __nv_fabs;
    /// x * y + z with one rounding, f64 (`__nv_fma`: `fma.rn.f64`).
    fma(x, y, z) -> f64 => __nv_fma;
}
