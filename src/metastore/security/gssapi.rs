//! The few GSSAPI calls a Kerberos SASL client needs, from MIT Kerberos' `libgssapi_krb5.so.2`
//! loaded at run time (never linked), so the binary starts on hosts without Kerberos and only a
//! Kerberos connection needs the library. Declarations follow RFC 2744 (the C bindings) and
//! MIT's `gssapi_ext.h` (`gss_acquire_cred_from`).

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;
use std::sync::OnceLock;

use libloading::Library;

type Om = u32;
type Handle = *mut c_void;

#[repr(C)]
struct Buffer {
    length: usize,
    value: *mut c_void,
}

impl Buffer {
    fn empty() -> Self {
        Buffer {
            length: 0,
            value: ptr::null_mut(),
        }
    }
    fn borrowed(bytes: &[u8]) -> Self {
        Buffer {
            length: bytes.len(),
            value: bytes.as_ptr() as *mut c_void,
        }
    }
}

#[repr(C)]
struct Oid {
    length: Om,
    elements: *mut c_void,
}

#[repr(C)]
struct KeyValue {
    key: *const c_char,
    value: *const c_char,
}

#[repr(C)]
struct KeyValueSet {
    count: Om,
    elements: *const KeyValue,
}

// 1.2.840.113554.1.2.2 (Kerberos 5 mechanism) and ...1.2.2.1 (krb5 principal name type).
static KRB5_MECH: [u8; 9] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];
static KRB5_NT_PRINCIPAL: [u8; 10] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01];

fn oid(bytes: &'static [u8]) -> Oid {
    Oid {
        length: bytes.len() as Om,
        elements: bytes.as_ptr() as *mut c_void,
    }
}

const GSS_C_INITIATE: c_int = 1;
const GSS_C_GSS_CODE: c_int = 1;
const GSS_C_MECH_CODE: c_int = 2;
const GSS_S_CONTINUE_NEEDED: Om = 1;
const GSS_C_MUTUAL_FLAG: Om = 2;
const GSS_C_SEQUENCE_FLAG: Om = 8;
const GSS_C_CONF_FLAG: Om = 16;
const GSS_C_INTEG_FLAG: Om = 32;

struct Lib {
    _lib: Library,
    import_name: unsafe extern "C" fn(*mut Om, *mut Buffer, *const Oid, *mut Handle) -> Om,
    release_name: unsafe extern "C" fn(*mut Om, *mut Handle) -> Om,
    acquire_cred: unsafe extern "C" fn(
        *mut Om,
        Handle,
        Om,
        *mut c_void,
        c_int,
        *mut Handle,
        *mut c_void,
        *mut Om,
    ) -> Om,
    acquire_cred_from: Option<
        unsafe extern "C" fn(
            *mut Om,
            Handle,
            Om,
            *mut c_void,
            c_int,
            *const KeyValueSet,
            *mut Handle,
            *mut c_void,
            *mut Om,
        ) -> Om,
    >,
    release_cred: unsafe extern "C" fn(*mut Om, *mut Handle) -> Om,
    #[allow(clippy::type_complexity)]
    init_sec_context: unsafe extern "C" fn(
        *mut Om,
        Handle,
        *mut Handle,
        Handle,
        *const Oid,
        Om,
        Om,
        *mut c_void,
        *mut Buffer,
        *mut *mut Oid,
        *mut Buffer,
        *mut Om,
        *mut Om,
    ) -> Om,
    delete_sec_context: unsafe extern "C" fn(*mut Om, *mut Handle, *mut Buffer) -> Om,
    wrap: unsafe extern "C" fn(
        *mut Om,
        Handle,
        c_int,
        Om,
        *mut Buffer,
        *mut c_int,
        *mut Buffer,
    ) -> Om,
    unwrap:
        unsafe extern "C" fn(*mut Om, Handle, *mut Buffer, *mut Buffer, *mut c_int, *mut Om) -> Om,
    release_buffer: unsafe extern "C" fn(*mut Om, *mut Buffer) -> Om,
    inquire_cred:
        unsafe extern "C" fn(*mut Om, Handle, *mut Handle, *mut Om, *mut c_int, *mut c_void) -> Om,
    display_name: unsafe extern "C" fn(*mut Om, Handle, *mut Buffer, *mut c_void) -> Om,
    display_status:
        unsafe extern "C" fn(*mut Om, Om, c_int, *const Oid, *mut Om, *mut Buffer) -> Om,
}

#[cfg(target_os = "macos")]
const LIBRARY: &str = "libgssapi_krb5.dylib";
#[cfg(not(target_os = "macos"))]
const LIBRARY: &str = "libgssapi_krb5.so.2";

fn lib() -> Result<&'static Lib, GssError> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| unsafe { load() })
        .as_ref()
        .map_err(|e| GssError::Library(e.clone()))
}

unsafe fn load() -> Result<Lib, String> {
    let lib = Library::new(LIBRARY).map_err(|e| {
        format!(
            "cannot load {LIBRARY} ({e}): install MIT Kerberos (Debian/Ubuntu: apt-get install \
             libgssapi-krb5-2; RHEL: yum install krb5-libs)"
        )
    })?;
    macro_rules! sym {
        ($name:literal) => {
            *lib.get(concat!($name, "\0").as_bytes())
                .map_err(|e| format!("{LIBRARY} lacks {}: {e}", $name))?
        };
    }
    Ok(Lib {
        import_name: sym!("gss_import_name"),
        release_name: sym!("gss_release_name"),
        acquire_cred: sym!("gss_acquire_cred"),
        acquire_cred_from: lib
            .get(b"gss_acquire_cred_from\0")
            .ok()
            .map(|s: libloading::Symbol<_>| *s),
        release_cred: sym!("gss_release_cred"),
        init_sec_context: sym!("gss_init_sec_context"),
        delete_sec_context: sym!("gss_delete_sec_context"),
        wrap: sym!("gss_wrap"),
        unwrap: sym!("gss_unwrap"),
        release_buffer: sym!("gss_release_buffer"),
        inquire_cred: sym!("gss_inquire_cred"),
        display_name: sym!("gss_display_name"),
        display_status: sym!("gss_display_status"),
        _lib: lib,
    })
}

/// A failed GSSAPI call.
#[derive(Debug, Clone)]
pub(crate) enum GssError {
    /// The library could not be loaded.
    Library(String),
    Call {
        call: &'static str,
        major: Om,
        minor: Om,
        /// The library's own words for both statuses.
        text: String,
    },
}

impl GssError {
    /// The routine error of the major status (RFC 2744: 7 no credentials, 11 expired, ...).
    pub(crate) fn routine(&self) -> u32 {
        match self {
            GssError::Call { major, .. } => (major >> 16) & 0xff,
            GssError::Library(_) => 0,
        }
    }
}

impl GssError {
    /// One line with the fix, for a context to `server`.
    pub(crate) fn explain(&self, server: &str) -> String {
        match self {
            GssError::Library(e) => e.clone(),
            GssError::Call { minor, text, .. } => {
                let failure = crate::kerberos::classify(self.routine(), *minor, text);
                crate::kerberos::explain(failure, server, &self.to_string())
            }
        }
    }
}

impl std::fmt::Display for GssError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GssError::Library(e) => f.write_str(e),
            GssError::Call { call, text, .. } => write!(f, "{call}: {text}"),
        }
    }
}

fn status_text(lib: &Lib, code: Om, kind: c_int) -> Vec<String> {
    let mut out = Vec::new();
    let mut context: Om = 0;
    let mech = oid(&KRB5_MECH);
    for _ in 0..8 {
        let mut minor = 0;
        let mut buf = Buffer::empty();
        let major =
            unsafe { (lib.display_status)(&mut minor, code, kind, &mech, &mut context, &mut buf) };
        if major != 0 {
            break;
        }
        out.push(
            take(lib, &mut buf)
                .map_or_else(String::new, |b| String::from_utf8_lossy(&b).into_owned()),
        );
        if context == 0 {
            break;
        }
    }
    out
}

fn check(lib: &Lib, call: &'static str, major: Om, minor: Om) -> Result<(), GssError> {
    if major & 0xffff_0000 == 0 {
        return Ok(());
    }
    let mut words = status_text(lib, major, GSS_C_GSS_CODE);
    if minor != 0 {
        words.extend(status_text(lib, minor, GSS_C_MECH_CODE));
    }
    words.retain(|w| !w.trim().is_empty());
    Err(GssError::Call {
        call,
        major,
        minor,
        text: words.join(": "),
    })
}

/// Copies a buffer the library allocated and releases it.
fn take(lib: &Lib, buf: &mut Buffer) -> Option<Vec<u8>> {
    let out = (!buf.value.is_null()).then(|| {
        unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length) }.to_vec()
    });
    let mut minor = 0;
    unsafe { (lib.release_buffer)(&mut minor, buf) };
    out
}

fn import(lib: &Lib, name: &str) -> Result<Handle, GssError> {
    let mut handle: Handle = ptr::null_mut();
    let mut minor = 0;
    let mut buf = Buffer::borrowed(name.as_bytes());
    let nt = oid(&KRB5_NT_PRINCIPAL);
    let major = unsafe { (lib.import_name)(&mut minor, &mut buf, &nt, &mut handle) };
    check(lib, "gss_import_name", major, minor)?;
    Ok(handle)
}

/// The default principal of the ticket cache (`KRB5CCNAME`), `user@REALM`: who the process is
/// when no principal is named.
pub(crate) fn cache_principal() -> Result<String, GssError> {
    let lib = lib()?;
    let (mut minor, mut ignored) = (0, 0);
    let mut cred: Handle = ptr::null_mut();
    let major = unsafe {
        (lib.acquire_cred)(
            &mut minor,
            ptr::null_mut(),
            0,
            ptr::null_mut(),
            GSS_C_INITIATE,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    check(lib, "gss_acquire_cred", major, minor)?;
    let mut name: Handle = ptr::null_mut();
    let major = unsafe {
        (lib.inquire_cred)(
            &mut minor,
            cred,
            &mut name,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    unsafe { (lib.release_cred)(&mut ignored, &mut cred) };
    check(lib, "gss_inquire_cred", major, minor)?;
    let mut buf = Buffer::empty();
    let major = unsafe { (lib.display_name)(&mut minor, name, &mut buf, ptr::null_mut()) };
    let text = take(lib, &mut buf).unwrap_or_default();
    unsafe { (lib.release_name)(&mut ignored, &mut name) };
    check(lib, "gss_display_name", major, minor)?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// The client side of one Kerberos security context.
pub(crate) struct Context {
    lib: &'static Lib,
    ctx: Handle,
    cred: Handle,
    target: Handle,
    established: bool,
}

// The handles are used by one thread at a time (the owner holds it behind a mutex).
unsafe impl Send for Context {}

impl Context {
    /// Prepares a context to `server` (`service/host@REALM`) with the credential of `client`
    /// (from `keytab` when given, else from the ticket cache; `None`: the cache's default).
    pub(crate) fn new(
        server: &str,
        client: Option<&str>,
        keytab: Option<&std::path::Path>,
    ) -> Result<Self, GssError> {
        let lib = lib()?;
        let mut this = Context {
            lib,
            ctx: ptr::null_mut(),
            cred: ptr::null_mut(),
            target: import(lib, server)?,
            established: false,
        };
        if let Some(client) = client {
            let mut name = import(lib, client)?;
            let result = this.acquire(name, keytab);
            let mut minor = 0;
            unsafe { (lib.release_name)(&mut minor, &mut name) };
            result?;
        }
        Ok(this)
    }

    fn acquire(&mut self, name: Handle, keytab: Option<&std::path::Path>) -> Result<(), GssError> {
        let lib = self.lib;
        let mut minor = 0;
        let major = match keytab {
            Some(keytab) => {
                let from = lib.acquire_cred_from.ok_or_else(|| {
                    GssError::Library(format!(
                        "{LIBRARY} lacks gss_acquire_cred_from (MIT Kerberos 1.11+ is needed \
                         for --keytab); use kinit instead"
                    ))
                })?;
                let path = CString::new(keytab.to_string_lossy().as_bytes())
                    .map_err(|_| GssError::Library("keytab path holds a NUL byte".into()))?;
                // A private cache per process: the user's own cache is left alone; MIT
                // renews from the keytab when the tickets in it expire.
                let cache =
                    CString::new(format!("MEMORY:hive-orc-compactor-{}", std::process::id()))
                        .expect("no NUL");
                let (k1, k2) = (c"client_keytab", c"ccache");
                let elements = [
                    KeyValue {
                        key: k1.as_ptr(),
                        value: path.as_ptr(),
                    },
                    KeyValue {
                        key: k2.as_ptr(),
                        value: cache.as_ptr(),
                    },
                ];
                let store = KeyValueSet {
                    count: 2,
                    elements: elements.as_ptr(),
                };
                unsafe {
                    from(
                        &mut minor,
                        name,
                        0,
                        ptr::null_mut(),
                        GSS_C_INITIATE,
                        &store,
                        &mut self.cred,
                        ptr::null_mut(),
                        ptr::null_mut(),
                    )
                }
            }
            None => unsafe {
                (lib.acquire_cred)(
                    &mut minor,
                    name,
                    0,
                    ptr::null_mut(),
                    GSS_C_INITIATE,
                    &mut self.cred,
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            },
        };
        check(lib, "gss_acquire_cred", major, minor)
    }

    pub(crate) fn is_established(&self) -> bool {
        self.established
    }

    /// One step of context establishment: the token to send (possibly empty).
    pub(crate) fn step(&mut self, input: Option<&[u8]>) -> Result<Vec<u8>, GssError> {
        let lib = self.lib;
        let mut minor = 0;
        let mut input_buf = input.map(Buffer::borrowed);
        let input_ptr = input_buf
            .as_mut()
            .map_or(ptr::null_mut(), |b| b as *mut Buffer);
        let mut out = Buffer::empty();
        let mech = oid(&KRB5_MECH);
        let major = unsafe {
            (lib.init_sec_context)(
                &mut minor,
                self.cred,
                &mut self.ctx,
                self.target,
                &mech,
                GSS_C_MUTUAL_FLAG | GSS_C_SEQUENCE_FLAG | GSS_C_INTEG_FLAG | GSS_C_CONF_FLAG,
                0,
                ptr::null_mut(),
                input_ptr,
                ptr::null_mut(),
                &mut out,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let token = take(lib, &mut out).unwrap_or_default();
        check(lib, "gss_init_sec_context", major, minor)?;
        self.established = major & GSS_S_CONTINUE_NEEDED == 0;
        Ok(token)
    }

    pub(crate) fn wrap(&mut self, encrypt: bool, data: &[u8]) -> Result<Vec<u8>, GssError> {
        let lib = self.lib;
        let (mut minor, mut conf) = (0, 0);
        let mut input = Buffer::borrowed(data);
        let mut out = Buffer::empty();
        let major = unsafe {
            (lib.wrap)(
                &mut minor,
                self.ctx,
                c_int::from(encrypt),
                0,
                &mut input,
                &mut conf,
                &mut out,
            )
        };
        let wrapped = take(lib, &mut out).unwrap_or_default();
        check(lib, "gss_wrap", major, minor)?;
        Ok(wrapped)
    }

    pub(crate) fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, GssError> {
        let lib = self.lib;
        let (mut minor, mut conf, mut qop) = (0, 0, 0);
        let mut input = Buffer::borrowed(data);
        let mut out = Buffer::empty();
        let major = unsafe {
            (lib.unwrap)(
                &mut minor, self.ctx, &mut input, &mut out, &mut conf, &mut qop,
            )
        };
        let plain = take(lib, &mut out).unwrap_or_default();
        check(lib, "gss_unwrap", major, minor)?;
        Ok(plain)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        let lib = self.lib;
        let mut minor = 0;
        unsafe {
            if !self.ctx.is_null() {
                (lib.delete_sec_context)(&mut minor, &mut self.ctx, ptr::null_mut());
            }
            if !self.cred.is_null() {
                (lib.release_cred)(&mut minor, &mut self.cred);
            }
            if !self.target.is_null() {
                (lib.release_name)(&mut minor, &mut self.target);
            }
        }
    }
}
