#!/usr/bin/perl

# nginx-staple.t -- the stapled SK proof (sovereign_key_staple) with real
# sk-timelines, a real sk-mirror and nginx with ngx_sk_module:
#   a client that asks gets the staple in TLS 1.2 and 1.3, from an RSA and
#     an ECDSA server, through a default server without the directive (the
#     SNI switch); the chain form for clients that cannot ask;
#   clients that do not ask (openssl s_client, curl, gnutls-cli, Python)
#     see a server flight identical, record for record, to an nginx without
#     staples, and the chain form breaks none of them;
#   sk verify and sk fetch decide from the staple with no mirror query; a
#     stale, tampered, untrusted-mirror or other-name staple is refused with
#     the reason and the mirrors asked; a replayed answer from before a
#     Bind is believed within staple_max_age only, one from before an
#     Unbind the client holds is refused;
#   with every mirror stopped: the real site accepted, an impostor rejected,
#     from the staple; the first handshake after a restart or a reload
#     carries the last good staple (from the cache); the refresher keeps it
#     until staple_max_age, then sends none and says why.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Fcntl qw(O_WRONLY O_NONBLOCK);
use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use SKTest;
use NginxTest;
use SKSite;
use SKPeers;
use SKTimeline ();
use SKMirror ();

my ($ngx, $d, $pe) = NginxTest->setup;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl'
    unless has_cmd('openssl') && has_cmd('curl');

# Three timelines, a mirror (answers not cached: each has the newest
# checkpoints); example.com and other.example bound.
my $w = world($d, names => { 'example.com' => 'https',
    'other.example' => 'https' }, mirror => { query_cache => 0 });
my $m = $w->{mirror};
my $trust = $w->{trust};
my $sk = $w->{sk}{'example.com'};
(my $skpub = $sk) =~ s/\.key$/.pub/;

# The servers' trust file: refresh often, keep a staple 20 s at most.
my $srvtrust = "$d/srv-trust.conf";
spew($srvtrust, slurp($trust) . "staple_refresh = 4\nstaple_retry = 1\n"
    . "staple_max_age = 20\n");

NginxTest::make_ca($d);
my ($ec, $eckey) = make_cert($d, 'example.com', 'ec');
my ($rsa, $rsakey) = make_cert($d, 'example.com', 'rsa');
my ($dflt, $dfltkey) = make_cert($d, 'default.test', 'rsa');
make_carrier($sk, $ec, 'example.com', "$d/c-ec.pem");
make_carrier($sk, $rsa, 'example.com', "$d/c-rsa.pem");
mkdir "$d/www";
spew("$d/www/index.html", "the real example.com\n");
my $scache = "$d/scache";
mkdir $scache;
chmod 0777, $scache;            # the workers (nobody) write it

my ($pr, $pc) = ($ngx->port('rsa'), $ngx->port('chain'));

# A server of example.com: certificate, key, its carrier.
sub sk_server {
    my ($port, $cert, $extra, $names) = @_;
    return "    server {\n        listen 127.0.0.1:$port ssl;\n"
        . "        server_name " . ($names // 'example.com') . ";\n"
        . "        root $d/www;\n"
        . "        ssl_certificate $cert->[0];\n"
        . "        ssl_certificate_key $cert->[1];\n"
        . "        sovereign_key_public $skpub;\n"
        . "        sovereign_key_carrier $cert->[2];\n$extra    }\n";
}
my @EC = ($ec, $eckey, "$d/c-ec.pem");
my @RSA = ($rsa, $rsakey, "$d/c-rsa.pem");

my $staple_conf = "        sovereign_key_staple extension;\n"
    . "        sovereign_key_trust $srvtrust;\n"
    . "        sovereign_key_staple_cache $scache;\n"
    . "        location = /sk { sovereign_key_status; }\n";
(my $chain_conf = $staple_conf) =~ s/extension/chain/;

# A: the ECDSA server behind a default server without the directive, an
# RSA server, the chain form.
my $conf_a = "    server {\n        listen 127.0.0.1:$pe ssl default_server;\n"
    . "        server_name default.test;\n"
    . "        ssl_certificate $dflt;\n        ssl_certificate_key $dfltkey;\n"
    . "    }\n"
    . sk_server($pe, \@EC, $staple_conf)
    . sk_server($pr, \@RSA, $staple_conf)
    . sk_server($pc, \@RSA, $chain_conf, 'example.com www.a.example.com');

# Configuration errors first.
$ngx->write_conf(sk_server($pe, \@EC,
    "        sovereign_key_staple extension;\n"));
my $r = $ngx->test_conf;
isnt($r->{rc}, 0, 'nginx -t: a staple without sovereign_key_trust');
like($r->{err}, qr/"sovereign_key_staple" needs "sovereign_key_trust"/,
    '... saying so') or diag($r->{err});
$ngx->write_conf(sk_server($pe, \@EC,
    "        sovereign_key_staple always;\n"));
$r = $ngx->test_conf;
like($r->{err}, qr/invalid value "always", expected "extension", "chain" or "off"/,
    'nginx -t: an unknown mode') or diag($r->{err});

$ngx->write_conf($conf_a);
$r = $ngx->test_conf;
is($r->{rc}, 0, 'nginx -t accepts the staple configuration')
    or diag($r->{err});
$ngx->start;

sub status {
    my ($port) = @_;
    my $r = run_cmd(['curl', '-sk', '--resolve',
        "example.com:$port:127.0.0.1", "https://example.com:$port/sk"]);
    return eval { decode_json($r->{out}) } // {};
}

# No staple in the cache at the first start: a worker fetches one at once.
ok(wait_until(sub { status($pe)->{staple}{served} }, 15),
    'first start: the worker fetched a staple') or diag($ngx->log);
my $st = status($pe)->{staple};
is($st->{mode}, 'extension', 'status: mode');
like($st->{names}[0]{log}, qr/^from mirror \Q$m->{url}\E: \d+ s old$/,
    'status: where it came from') or diag(explain($st));
ok($st->{bytes} > 1000 && defined $st->{age}, 'status: its size and age');
like($ngx->log, qr/\[notice\].*sovereign_key_staple example\.com: from (mirror|the cache)/,
    'the refresh is logged');
ok(-s "$scache/proof/example.com", 'the staple is in the cache');
spew("$d/staple-copy", slurp("$scache/proof/example.com"));
ok(wait_until(sub { status($pr)->{staple}{served}
        && status($pc)->{staple}{served} }, 15),
    'the other servers have theirs (from the cache or the mirror)');

# A client that asks: TLS 1.2 and 1.3, ECDSA and RSA.
sub show {
    my ($port, @more) = @_;
    my $r = sk('staple', 'show', '--connect', "127.0.0.1:$port",
        '--servername', 'example.com', '--trust', $trust, '--json', @more);
    $r->{j} = eval { decode_json($r->{out}) } // {};
    return $r;
}
for my $case ([$pe, 'ECDSA'], [$pr, 'RSA']) {
    for my $v ('1.2', '1.3') {
        $r = show($case->[0], "--tls$v");
        is($r->{rc}, 0, "$case->[1], TLS $v: a staple that checks")
            or diag($r->{out} . $r->{err});
        is($r->{j}{form}, 'extension', '... in the extension');
        is($r->{j}{tls}, "TLSv$v", '... over TLS ' . $v);
        ok($r->{j}{answers}[0]{valid}
            && $r->{j}{answers}[0]{name} eq 'example.com'
            && $r->{j}{answers}[0]{entries} == 3,
            '... the answer for example.com, 3 entries')
            or diag($r->{out});
    }
}
my $bytes = $r->{j}{bytes};
diag("a staple for 3 timelines: $bytes bytes");
$r = sk('staple', 'show', '--connect', "127.0.0.1:$pe", '--servername',
    'default.test');
is($r->{rc}, 1, 'the default server (no directive, no carrier): none')
    or diag($r->{out});
like($r->{err}, qr/stapled nothing/, '... saying so');

# The certificate form: after the carrier, for every client.
my $certs = served_chain($pc, servername => 'example.com');
is(scalar @$certs, 4, 'chain form: leaf, CA, carrier, staple certificate');
like(cert_subject($certs->[3]), qr/O ?= ?Sovereign Key Staple, CN ?= ?example\.com/,
    '... the staple certificate last');
$r = show($pc);
is($r->{j}{form}, 'chain', '... sk staple show finds it in the chain');
ok($r->{j}{answers}[0]{valid}, '... and it checks') or diag($r->{out});
is_deeply([map { $_->{name} } @{$r->{j}{answers}}],
    ['example.com', 'www.a.example.com', 'a.example.com'],
    '... with answers for the server names below the carrier\'s, which a '
    . 'client of www.a.example.com looks up') or diag($r->{out});
is(scalar @{served_chain($pe, servername => 'example.com')}, 3,
    'extension form: no staple certificate in the chain');

# sk verify and sk fetch decide from the staple: no mirror asked.
my $nc = 0;
sub verify {
    my ($url, $port, @more) = @_;
    my $r = sk('verify', '--trust', $trust, '--cache', "$d/cc" . $nc++,
        '--connect', "127.0.0.1:$port", '--json', @more, $url);
    $r->{j} = eval { decode_json($r->{out}) } // {};
    return $r;
}
$r = verify("https://example.com:$pe", $pe);
is($r->{rc}, 0, 'sk verify: accept') or diag($r->{out} . $r->{err});
is($r->{j}{from}, 'staple', '... decided from the staple');
is($r->{j}{staple}, 'extension', '... the extension');
is_deeply([map { $_->{url} } @{$r->{j}{mirrors}}], ['staple'],
    '... no mirror asked') or diag($r->{out});
like($r->{err}, qr/^sk: staple: fresh: answer of \Q$m->{url}\E/m,
    '... saying so on stderr');
$r = verify("https://example.com:$pc", $pc);
is($r->{rc}, 0, 'sk verify, chain form: accept') or diag($r->{out});
is($r->{j}{staple}, 'chain', '... from the staple certificate');
is($r->{j}{from}, 'staple', '... no mirror asked');
$r = verify("https://example.com:$pe", $pe, '--no-staple');
is($r->{j}{from}, 'mirror', 'sk verify --no-staple: the mirror decides');
is($r->{j}{staple}, 'none', '... no staple asked for');

# Clients that do not ask: the server's first flight (ServerHello, and in
# TLS 1.3 EncryptedExtensions, Certificate, ...: each record's type and
# length) is the same as from an nginx without staples.
my $b = NginxTest->new;
my $pb = $b->port;
$b->write_conf(sk_server($pb, \@RSA, ''));
$b->start;
my $PROXY = <<'EOF';
use strict;
use IO::Socket::INET;
use IO::Select;
my ($lport, $tport, $log) = @ARGV;
my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
    LocalPort => $lport, Listen => 8, ReuseAddr => 1) or die "listen: $!";
while (my $c = $srv->accept) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $tport) or do { close $c; next };
    my ($cb, $sb, $crec, @flight) = ('', '', 0);
    my $sel = IO::Select->new($c, $s);
    LOOP: while (my @r = $sel->can_read(5)) {
        for my $h (@r) {
            my $n = sysread($h, my $buf, 65536);
            last LOOP unless $n;
            syswrite($h == $c ? $s : $c, $buf);
            if ($h == $c) {
                $cb .= $buf;
                while (length $cb >= 5
                       && length $cb >= 5 + unpack('n', substr($cb, 3, 2))) {
                    substr($cb, 0, 5 + unpack('n', substr($cb, 3, 2))) = '';
                    $crec++;
                }
                next;
            }
            $sb .= $buf;
            while (length $sb >= 5
                   && length $sb >= 5 + unpack('n', substr($sb, 3, 2))) {
                my $l = unpack('n', substr($sb, 3, 2));
                # the server's first flight: until the client's second record
                push @flight, unpack('C', $sb) . ":$l" if $crec < 2;
                substr($sb, 0, 5 + $l) = '';
            }
        }
    }
    open my $f, '>>', $log or die;
    print $f "@flight\n";
    close $f;
    close $c;
    close $s;
}
EOF
my %px;
for my $t (['a', $pr], ['b', $pb]) {
    my $port = free_port();
    $px{$t->[0]} = { port => $port, log => "$d/proxy-$t->[0].log",
        pid => run_daemon(['perl', '-e', $PROXY, $port, $t->[1],
            "$d/proxy-$t->[0].log"], "$d/proxy-$t->[0].err") };
    wait_for_port($port) or BAIL_OUT('proxy did not start');
}
sub flight {
    my ($which, @cmd) = @_;
    my $log = $px{$which}{log};
    my $before = -e $log ? () = slurp($log) =~ /\n/g : 0;
    my $r = run_cmd(['sh', '-c', join(' ', map { my $x = $_;
        $x =~ s/'/'\\''/g; "'$x'" } @cmd) . ' </dev/null']);
    wait_until(sub { (() = slurp($log) =~ /\n/g) > $before }, 10);
    my @lines = split /\n/, slurp($log);
    return { rc => $r->{rc}, flight => $lines[-1] // '', out => $r->{out} };
}
my $python = has_cmd('python3');
my %clients = (
    's_client TLS 1.2' => sub { ('openssl', 's_client', '-connect',
        "127.0.0.1:$_[0]", '-servername', 'example.com', '-tls1_2') },
    's_client TLS 1.3' => sub { ('openssl', 's_client', '-connect',
        "127.0.0.1:$_[0]", '-servername', 'example.com', '-tls1_3') },
    'curl' => sub { ('curl', '-sk', '--resolve',
        "example.com:$_[0]:127.0.0.1", "https://example.com:$_[0]/") },
);
$clients{'gnutls-cli'} = sub { ('gnutls-cli', '--insecure', '-p', $_[0],
    '--sni-hostname', 'example.com', '127.0.0.1') } if has_cmd('gnutls-cli');
$clients{python} = sub { ($python, '-c', 'import socket, ssl, sys
c = ssl.create_default_context()
c.check_hostname = False
c.verify_mode = ssl.CERT_NONE
s = c.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))),
    server_hostname="example.com")
s.close()', $_[0]) } if $python;
for my $name (sort keys %clients) {
    my $fa = flight('a', $clients{$name}->($px{a}{port}));
    my $fb = flight('b', $clients{$name}->($px{b}{port}));
    ok($fa->{flight} ne '', "$name: the server's first flight recorded");
    is($fa->{flight}, $fb->{flight},
        "$name: not asking, it gets the same records as without staples")
        or diag("with: $fa->{flight}\nwithout: $fb->{flight}");
}
my $fa = flight('a', $SKTest::SK, 'staple', 'show', '--connect',
    "127.0.0.1:$px{a}{port}", '--servername', 'example.com', '--tls1.3');
my $fb = flight('b', $SKTest::SK, 'staple', 'show', '--connect',
    "127.0.0.1:$px{b}{port}", '--servername', 'example.com', '--tls1.3');
isnt($fa->{flight}, $fb->{flight},
    '... while a client that asks gets a longer one (the staple)');
$b->stop;

# Unaware clients are unaffected by the chain form too.
is(run_cmd(['curl', '-s', '--cacert', "$d/ca.pem", '--resolve',
    "example.com:$pc:127.0.0.1", "https://example.com:$pc/"])->{out},
    "the real example.com\n", 'chain form: curl verifies and fetches');
SKIP: {
    skip 'no gnutls-cli', 2 unless has_cmd('gnutls-cli');
    for my $prio ('NORMAL', 'NORMAL:-VERS-TLS1.3') {
        $r = run_cmd(['sh', '-c', "printf 'GET / HTTP/1.0\\r\\nHost: "
            . "example.com\\r\\n\\r\\n' | gnutls-cli --x509cafile "
            . "$d/ca.pem --verify-hostname example.com --sni-hostname "
            . "example.com --priority $prio -p $pc 127.0.0.1"]);
        like($r->{out}, qr/\r\n\r\nthe real example\.com\n/,
            "chain form: gnutls-cli ($prio) verifies and fetches")
            or diag($r->{out} . $r->{err});
    }
}
SKIP: {
    skip 'no python3', 1 unless $python;
    is(run_cmd([$python, '-c', 'import socket, ssl, sys
c = ssl.create_default_context(cafile=sys.argv[2])
s = c.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))),
    server_hostname="example.com")
s.close()', $pc, "$d/ca.pem"])->{rc}, 0, 'chain form: Python verifies');
}

# Refused staples: served in the certificate form by a plain TLS server
# with the real carrier; the mirror decides instead, saying why.
my $good = slurp("$scache/proof/example.com");
sub staple_chain {
    my ($name, $bytes, $leaf) = @_;
    spew("$d/$name.bin", $bytes);
    my $r = sk('staple', 'wrap', '-i', "$d/$name.bin", '-o', "$d/$name.pem");
    die "sk staple wrap: $r->{err}" if $r->{rc};
    spew("$d/$name-chain.pem", slurp($leaf // $rsa)
        . slurp("$d/c-rsa.pem") . slurp("$d/$name.pem"));
    return "$d/$name-chain.pem";
}
my $bs = bad_staples($d, $good);
my ($mfpr, $fakefpr) = @$bs{qw(fpr fakefpr)};
$r = sk('staple', 'fetch', '--trust', $trust, '--cache', $scache,
    'other.example');
like($r->{out}, qr/^sk:proof:other\.example: from mirror \Q$m->{url}\E: \d+ s old$/,
    'sk staple fetch: other.example\'s answer into the cache')
    or diag($r->{out} . $r->{err});
my %bad = (
    tampered  => [$bs->{tampered},
        qr/refused: answer of \Q$m->{url}\E: answer: the mirror's signature does not verify/],
    untrusted => [$bs->{untrusted},
        qr/refused: no answer for example\.com from a trusted mirror \(one signed by \Q$fakefpr\E/],
    othername => [slurp("$scache/proof/other.example"),
        qr/not used: no answer for example\.com/],
);
for my $k (sort keys %bad) {
    my $p = free_port();
    my $pid = start_peer('tls', $p, "$d/peer-$k.log",
        staple_chain($k, $bad{$k}[0]), $rsakey);
    $r = verify("https://example.com:$p", $p);
    is($r->{rc}, 0, "$k staple: still accept") or diag($r->{out} . $r->{err});
    is($r->{j}{from}, 'mirror', '... from the mirror');
    is($r->{j}{staple}, 'chain', '... the staple it had, not used');
    like($r->{err}, $bad{$k}[1], '... saying why') or diag($r->{err});
    stop_peer($pid);
}

# Stale by the client's rules: refused, the mirror asked.
my $trust_short = "$d/trust-short.conf";
spew($trust_short, slurp($trust) . "staple_max_age = 1\n");
sleep 1.5;
$r = verify("https://example.com:$pe", $pe, '--trust', $trust_short);
is($r->{rc}, 0, 'stale staple: accept') or diag($r->{err});
is($r->{j}{from}, 'mirror', '... from the mirror');
like($r->{err}, qr/^sk: staple: refused: answer of \Q$m->{url}\E: stale: its oldest checkpoint is \d+ s old \(staple_max_age 1\)/m,
    '... the staple refused as stale') or diag($r->{err});

# A replayed answer from before a Bind: late.example's "no entries".
my $before = SKMirror::query($m, 'late.example')->{body};
like($before, qr/\ASK-Mirror-Answer: 1\nName: late\.example\n/,
    'an answer for late.example before its Bind');
my $latesk = SKTimeline::ed25519_key($d, 'sk-late');
my $ev = SKTimeline::issue($d, "$d/tlca", $latesk, 'late.example',
    "$d/ev-late");
for my $tid (sort keys %{$w->{timelines}}) {
    my $a = SKTimeline::append($w->{timelines}{$tid},
        SKTimeline::bind_entry(name => 'late.example', key => $latesk,
            services => 'https', chain => [$ev]));
    is($a->{code}, 201, "timeline $tid: Bind late.example");
}
ok(wait_until(sub { SKMirror::query($m, 'late.example')->{body}
        =~ /^Bind: 1$/m }, 20), 'the mirror serves the Bind');
my ($latecert, $latekey) = make_cert($d, 'late.example', 'rsa');
my $lp = free_port();
my $latepid = start_peer('tls', $lp, "$d/peer-late.log",
    staple_chain('replay', one_staple('late.example', $mfpr, $before),
        $latecert), $latekey);
$r = sk('verify', '--trust', $trust, '--cache', "$d/cc" . $nc++,
    '--connect', "127.0.0.1:$lp", '--json', "https://late.example:$lp");
is($r->{rc}, 3, 'replayed "no entries" within staple_max_age: believed '
    . '(none), the window the client allows')
    or diag($r->{out} . $r->{err});
my ($cpts) = $before =~ /^Timestamp (\d+)$/m;
my $age = time() - $cpts;
spew("$d/trust-replay.conf", slurp($trust) . "staple_max_age = "
    . ($age > 1 ? int($age - 1) : 0) . "\n");
$r = sk('verify', '--trust', "$d/trust-replay.conf", '--cache',
    "$d/cc" . $nc++, '--connect', "127.0.0.1:$lp", '--json',
    "https://late.example:$lp");
is($r->{rc}, 1, '... past it: refused, the mirror shows the Bind: reject')
    or diag($r->{out} . $r->{err});
like($r->{err}, qr/staple: refused: .*stale/, '... the staple stale')
    or diag($r->{err});
stop_peer($latepid);

# A replayed answer from before an Unbind the client holds.
mkdir "$d/rcache";
sk('staple', 'fetch', '--trust', $trust, '--cache', "$d/rcache",
    'other.example');
my $prerevoke = slurp("$d/rcache/proof/other.example");
for my $tid (sort keys %{$w->{timelines}}) {
    SKTimeline::append($w->{timelines}{$tid}, SKTimeline::unbind_entry(
        name => 'other.example', key => $w->{sk}{'other.example'}));
}
ok(wait_until(sub { SKMirror::query($m, 'other.example')->{body}
        =~ /^Unbind: 1$/m }, 20), 'the mirror serves the Unbind');
my ($ocert, $okey) = make_cert($d, 'other.example', 'rsa');
my $op = free_port();
my $opid = start_peer('tls', $op, "$d/peer-other.log",
    staple_chain('prerevoke', $prerevoke, $ocert), $okey);
spew("$d/trust-t0.conf", slurp($trust) . "t1 = 0\n");
my @ov = ('verify', '--trust', "$d/trust-t0.conf", '--cache', "$d/ocache",
    '--connect', "127.0.0.1:$op", '--json', "https://other.example:$op");
$r = sk(@ov, '--no-staple');
is($r->{rc}, 3, 'the client learns the Unbind (none: revoked)')
    or diag($r->{out});
$r = sk(@ov);
like($r->{err}, qr/staple: refused: answer of \Q$m->{url}\E is older than what the client holds: timeline \d+ tree of \d+ entries, the cache has \d+/,
    'a replayed staple from before it: refused') or diag($r->{err});
is($r->{rc}, 3, '... and the revocation stands') or diag($r->{out});
stop_peer($opid);

# Every mirror stopped.
stop_daemon($m->{pid});
$r = verify("https://example.com:$pe", $pe);
is($r->{rc}, 0, 'mirrors down: the real site accepted from the staple')
    or diag($r->{out} . $r->{err});
is($r->{j}{from}, 'staple', '... the staple decided');
$r = sk('fetch', '--trust', $trust, '--cache', "$d/cc" . $nc++, '--cacert',
    "$d/ca.pem", '--resolve', "example.com:$pe:127.0.0.1",
    "https://example.com:$pe/");
is($r->{out}, "the real example.com\n", 'sk fetch from the staple too')
    or diag($r->{err});
my $evil = SKTimeline::ed25519_key($d, 'evil');
my ($icert, $ikey) = make_cert($d, 'example.com-impostor', 'ec',
    ['example.com']);
make_carrier($evil, $icert, 'example.com', "$d/c-evil.pem");
staple_chain('stolen', $good);
spew("$d/impostor-chain.pem", slurp($icert) . slurp("$d/c-evil.pem")
    . slurp("$d/stolen.pem"));
my $ip = free_port();
my $ipid = start_peer('tls', $ip, "$d/peer-impostor.log",
    "$d/impostor-chain.pem", $ikey);
$r = verify("https://example.com:$ip", $ip);
is($r->{rc}, 1, 'mirrors down: an impostor replaying the real staple: '
    . 'reject') or diag($r->{out} . $r->{err});
is($r->{j}{from}, 'staple', '... decided from the staple');
is($r->{j}{check}, 'wrong-sk', '... its carrier is another SK\'s');
is(slurp("$d/peer-impostor.log") =~ /received [1-9]/ ? 1 : 0, 0,
    '... and received nothing');
stop_peer($ipid);

# The first handshake after a restart, and after a reload, carries the
# last good staple: from the cache, no mirror.
$ngx->stop;
$ngx->start;
$r = show($pe);
is($r->{rc}, 0, 'restart, mirrors down: the first handshake has the staple')
    or diag($r->{out} . $r->{err});
$ngx->reload;
$r = show($pe);
is($r->{rc}, 0, 'reload: the first handshake has the staple')
    or diag($r->{out} . $r->{err});
unlink "$scache/proof/example.com";
$ngx->reload;
$r = show($pe);
is($r->{rc}, 0, 'reload, the cache lost it: the last good staple of the '
    . 'cycle before') or diag($r->{out} . $r->{err});

# What the workers' user can put in the staple cache, which the master
# reads at each reload: a FIFO is refused at once (it used to hang the
# master in open(2) until some writer came, the reload with it), a
# symbolic link is not followed (here to a copy of the real staple); each
# said, and the last good staple still served.
sub as_worker {
    my ($code) = @_;
    my ($uid, $gid) = $> == 0 ? (getpwnam('nobody'))[2, 3] : ($>, $));
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        $) = "$gid $gid";
        $( = $gid;
        $< = $> = $uid;
        exit($code->() ? 0 : 1);
    }
    waitpid($pid, 0);
    return $? == 0;
}
my $proof = "$scache/proof/example.com";
ok(as_worker(sub { unlink $proof; POSIX::mkfifo($proof, 0644) }),
    'the workers\' user makes the cached staple a FIFO');
my $t0 = time;
ok($ngx->reload, 'a FIFO in the staple cache: the reload completes')
    or diag($ngx->log);
ok(time - $t0 < 10, '... at once');
like($ngx->log, qr/\Q$proof\E: not a regular file \(a FIFO\)/,
    '... saying the cached file is a FIFO') or diag($ngx->log);
$r = show($pe);
is($r->{rc}, 0, '... and the last good staple is served')
    or diag($r->{out} . $r->{err});
# Whatever the test's fate, no master waits on that FIFO any more.
if (sysopen(my $wfh, $proof, O_WRONLY | O_NONBLOCK)) { close $wfh }
unlink $proof;
ok(as_worker(sub { symlink("$d/staple-copy", $proof) }),
    'the workers\' user makes the cached staple a symbolic link');
ok($ngx->reload, 'a symbolic link in the staple cache: the reload completes');
like($ngx->log, qr/\Q$proof\E: not a regular file \(a symbolic link\)/,
    '... not followed, and said') or diag($ngx->log);
$r = show($pe);
is($r->{rc}, 0, '... and the last good staple is served')
    or diag($r->{out} . $r->{err});
unlink $proof;

# The refresher with the mirror down: kept until staple_max_age (20 s),
# then none, with the reason.
ok(wait_until(sub { ($ngx->log =~ /\[warn\].*sovereign_key_staple example\.com: kept the answer of \Q$m->{url}\E, \d+ s old, \d+ s before staple_max_age: mirror \Q$m->{url}\E: unreachable/) ? 1 : 0 }, 15),
    'mirror down: the worker keeps the last good staple, saying why')
    or diag($ngx->log);
ok(status($pe)->{staple}{served}, '... and still serves it');
ok(wait_until(sub { !status($pe)->{staple}{served} }, 30),
    'once older than staple_max_age: no staple') or diag($ngx->log);
wait_until(sub { status($pe)->{staple}{names}[0]{log} =~ /^dropped/ }, 5);
$st = status($pe)->{staple};
ok(!defined $st->{age}, 'status: no age');
like($st->{names}[0]{log}, qr/^dropped the answer of \Q$m->{url}\E: \d+ s old, beyond staple_max_age \(20 s\)/,
    'status: why') or diag(explain($st));
like($ngx->log, qr/\[warn\].*sovereign_key_staple example\.com: dropped the answer .*; sending no staple/,
    '... logged');
$r = show($pe);
is($r->{rc}, 1, 'a client that asks gets none') or diag($r->{out});

is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_daemon($px{$_}{pid}) for keys %px;
stop_world($w);
done_testing();
