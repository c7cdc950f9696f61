package SKPeers;

# SKPeers -- small network peers the client tests run against (core Perl
# and IO::Socket::SSL): servers that record what reaches them, and ones
# that misbehave.  Each runs as a daemon (run_daemon) on 127.0.0.1:PORT and
# appends one line per event to LOG, so a test reads what the peer saw.
#
#   start_peer(KIND, PORT, LOG, ARGS...)   run KIND in its own process,
#                                          wait for the port; returns pid
#   stop_peer(PID)                         end it and every process it
#                                          forked (its process group)
#   Kinds:
#   tls     CHAIN KEY   a TLS server (the chain file is sent as is, e.g.
#                       an impostor's certificate with or without a
#                       carrier).  Logs "handshake ok" or "handshake
#                       failed", then "received N bytes" and the bytes
#                       (after "| " per line); answers "impostor\n".
#   plain               the same without TLS (an http:// server).
#   reset               accepts and resets the connection at once (RST).
#   socks   MODE        a SOCKS5 "proxy" that logs the greeting and the
#                       CONNECT request ("connect ATYP HOST PORT") and
#                       then, by MODE: "garbage" answers junk, "truncated"
#                       half a reply and closes, "hang" never answers,
#                       "refuse" a proper general-failure reply.  Any
#                       bytes after the request are logged as "after N".

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
use IO::Socket::SSL;
use Socket qw(SOL_SOCKET SO_LINGER);
use SKTest;

our @EXPORT = qw(start_peer stop_peer);

sub note {
    my ($log, $line) = @_;
    open my $f, '>>', $log or die "$log: $!";
    print $f $line;
    close $f;
}

sub listener {
    my ($port) = @_;
    my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
        LocalPort => $port, Listen => 16, ReuseAddr => 1)
        or die "listen $port: $!";
    return $s;
}

# Up to a blank line (the end of HTTP headers) or EOF; 3 s of silence ends
# it too.
sub read_some {
    my ($c) = @_;
    my ($buf, $sel) = ('', IO::Select->new($c));
    while ($buf !~ /\r\n\r\n/) {
        last unless ($c->can('pending') && $c->pending) || $sel->can_read(3);
        my $n = sysread($c, my $chunk, 65536);
        last unless $n;
        $buf .= $chunk;
    }
    return $buf;
}

sub record {
    my ($c, $log) = @_;
    my $got = read_some($c);
    (my $shown = $got) =~ s/^/| /mg;
    note($log, "received " . length($got) . " bytes\n"
        . ($got eq '' ? '' : "$shown\n"));
    print $c "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close"
        . "\r\n\r\nimpostor\n" if $got ne '';
}

sub serve_tls {
    my ($port, $log, $chain, $key) = @_;
    my $srv = listener($port);
    while (my $c = $srv->accept) {
        if (!IO::Socket::SSL->start_SSL($c, SSL_server => 1,
                SSL_cert_file => $chain, SSL_key_file => $key,
                Timeout => 5)) {
            note($log, "handshake failed: $SSL_ERROR\n");
            close $c;
            next;
        }
        note($log, "handshake ok\n");
        record($c, $log);
        $c->close(SSL_fast_shutdown => 1);
    }
}

sub serve_plain {
    my ($port, $log) = @_;
    my $srv = listener($port);
    while (my $c = $srv->accept) {
        note($log, "connection\n");
        record($c, $log);
        close $c;
    }
}

sub serve_reset {
    my ($port, $log) = @_;
    my $srv = listener($port);
    while (my $c = $srv->accept) {
        note($log, "reset\n");
        setsockopt($c, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
        close $c;
    }
}

sub read_n {
    my ($c, $n) = @_;
    my $buf = '';
    my $sel = IO::Select->new($c);
    while (length $buf < $n) {
        return undef unless $sel->can_read(5);
        my $r = sysread($c, $buf, $n - length $buf, length $buf);
        return undef unless $r;
    }
    return $buf;
}

sub socks_request {
    my ($c, $log) = @_;
    my $greet = read_n($c, 2) // return 0;
    my ($ver, $nm) = unpack('CC', $greet);
    read_n($c, $nm) // return 0;
    note($log, "greeting version $ver\n");
    syswrite($c, "\x05\x00");
    my $head = read_n($c, 4) // return 0;
    my (undef, $cmd, undef, $atyp) = unpack('CCCC', $head);
    my $host;
    if ($atyp == 3) {
        my $len = unpack('C', read_n($c, 1) // return 0);
        $host = read_n($c, $len) // return 0;
    } elsif ($atyp == 1) {
        $host = join('.', unpack('C4', read_n($c, 4) // return 0));
    } else {
        $host = unpack('H*', read_n($c, 16) // return 0);
    }
    my $port = unpack('n', read_n($c, 2) // return 0);
    note($log, "connect $atyp $host $port\n");
    return 1;
}

sub serve_socks {
    my ($port, $log, $mode) = @_;
    my $srv = listener($port);
    $SIG{CHLD} = 'IGNORE';
    while (my $c = $srv->accept) {
        # One process per client, so a hanging one blocks no other; it
        # lets go of the listener, so the port is free once stop_peer
        # has ended the process group.
        next if fork;
        close $srv;
        if (socks_request($c, $log)) {
            if ($mode eq 'garbage') {
                syswrite($c, "HTTP/1.0 200 OK\r\n\r\n" . ("\xff" x 64));
            } elsif ($mode eq 'truncated') {
                syswrite($c, "\x05\x00\x00");
            } elsif ($mode eq 'refuse') {
                syswrite($c, "\x05\x01\x00\x01\0\0\0\0\0\0");
            } else {
                sleep 3600;
            }
            my $sel = IO::Select->new($c);
            if ($sel->can_read(2)) {
                my $n = sysread($c, my $after, 65536) // 0;
                note($log, "after $n\n") if $n > 0;
            }
        }
        close $c;
        exit 0;
    }
}

my %peers;         # pid => 1, for the END block

my %serve = (tls => \&serve_tls, plain => \&serve_plain,
    reset => \&serve_reset, socks => \&serve_socks);

sub serve {
    my ($kind, $port, $log, @args) = @_;
    # A client that closes right after the handshake (sk verify) must not
    # kill the peer with the session tickets it is sent.
    $SIG{PIPE} = 'IGNORE';
    $serve{$kind}->($port, $log, @args);
}

# What the readiness probe (a connect that sends nothing) leaves in the
# log; the log starts empty once it is there.
my %probe = (tls => qr/handshake failed/, plain => qr/received 0 bytes/,
    reset => qr/reset/, socks => qr/^/);

sub start_peer {
    my ($kind, $port, $log, @args) = @_;
    die "start_peer: no kind $kind" unless $serve{$kind};
    spew($log, '');
    my $pid = run_daemon(['perl', "-I$SKTest::ROOT/t/lib", '-MSKPeers',
        '-e', 'SKPeers::serve(@ARGV)', $kind, $port, $log, @args],
        "$log.stderr");
    wait_for_port($port, 10) or die "$kind peer did not start: "
        . slurp("$log.stderr");
    wait_until(sub { slurp($log) =~ $probe{$kind} }, 10);
    spew($log, '');
    $peers{$pid} = 1;
    return $pid;
}

sub stop_peer {
    my ($pid) = @_;
    delete $peers{$pid};
    kill 'KILL', -$pid;         # run_daemon made it a group leader
    return stop_daemon($pid);
}

END {
    local $?;
    kill 'KILL', -$_ for keys %peers;
}

1;
