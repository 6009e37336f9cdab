//! Network: TCP and UDP to loopback listeners fail and the listeners receive nothing;
//! a node that opens the network reaches them.

use crate::{available, bash, run_in, scratch};
use conclave_sandbox::Policy;
use std::net::{TcpListener, UdpSocket};

fn listeners() -> (TcpListener, UdpSocket) {
    let tcp = TcpListener::bind("127.0.0.1:0").expect("a TCP listener");
    let udp = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
    tcp.set_nonblocking(true).expect("non-blocking");
    udp.set_nonblocking(true).expect("non-blocking");
    (tcp, udp)
}

fn port(addr: std::io::Result<std::net::SocketAddr>) -> u16 {
    addr.expect("an address").port()
}

#[test]
fn tcp_connect_to_loopback_fails_and_the_listener_gets_nothing() {
    if !available() {
        return;
    }
    let (tcp, _) = listeners();
    let scratch = scratch();
    let ran = bash(&scratch, &format!("echo hi > /dev/tcp/127.0.0.1/{}", port(tcp.local_addr())));
    assert!(!ran.ok(), "{}", ran.stderr());
    assert!(tcp.accept().is_err(), "the listener accepted a connection");
}

#[test]
fn udp_send_to_loopback_fails_and_the_socket_gets_nothing() {
    if !available() {
        return;
    }
    let (_, udp) = listeners();
    let scratch = scratch();
    let ran = bash(&scratch, &format!("echo hi > /dev/udp/127.0.0.1/{}", port(udp.local_addr())));
    assert!(!ran.ok(), "{}", ran.stderr());
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(udp.recv(&mut [0u8; 16]).is_err(), "the socket received a datagram");
}

#[test]
fn a_unix_socket_cannot_be_opened_but_a_socketpair_can() {
    if !available() {
        return;
    }
    let scratch = scratch();
    let script = "import socket\n\
        a, b = socket.socketpair()\n\
        a.send(b'x'); print('pair', b.recv(1))\n\
        try:\n    socket.socket(socket.AF_UNIX)\n    print('unix socket opened')\n\
        except OSError as e:\n    print('refused', e.errno)\n";
    let ran = bash(&scratch, &format!("/usr/bin/python3 -c \"{script}\""));
    assert!(
        ran.stdout().contains("pair b'x'") && ran.stdout().contains("refused 1"),
        "{} {}",
        ran.stdout(),
        ran.stderr()
    );
}

#[test]
fn a_node_that_opens_the_network_reaches_loopback() {
    if !available() {
        return;
    }
    let (tcp, _) = listeners();
    let scratch = scratch();
    let mut policy = Policy::new(scratch.path().to_path_buf());
    policy.network = true;
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{}", port(tcp.local_addr()));
    let ran = run_in(&policy, scratch.path(), &["bash", "-c", &script]);
    assert!(ran.ok(), "{}", ran.stderr());
    assert!(tcp.accept().is_ok(), "the listener saw the connection");
    assert!(ran.record.network && !ran.record.layers.contains(&conclave_shared::SandboxLayer::SeccompSockets));
}
