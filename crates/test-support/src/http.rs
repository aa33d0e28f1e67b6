//! Reading what a client sent to a loopback fake server the tests run on
//! plain blocking sockets (the CLI tests' upstreams and summarizers).

use std::io::Read;
use std::net::TcpStream;

/// One HTTP/1.1 request, head and `content-length` body, whole; what
/// arrived so far when the client closes first.
pub fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 65536];
    loop {
        let n = stream.read(&mut buffer).expect("read from the test client");
        if n == 0 {
            return bytes;
        }
        bytes.extend_from_slice(&buffer[..n]);
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().expect("a numeric content-length"));
            if bytes.len() >= end + 4 + length {
                return bytes;
            }
        }
    }
}
