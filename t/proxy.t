#!/usr/bin/perl

# proxy.t -- `sk proxy` with real browsers: headless Chromium (the
# DevTools protocol on a pipe) and Firefox ESR (Marionette) through the
# proxy, against Debian's nginx with the module (the real site, HTTP/2
# and HTTP/1.1), an impostor nginx server with a CA-valid certificate and
# no carrier, a name without an SK, and the site's own onion on a private
# Tor network.  One set of servers and one Tor network for the file; curl
# for what needs no browser.
#   --install-ca: the local CA into Chromium's and Firefox's NSS
#     databases (and --remove-ca out); a CA key others may read, or its
#     directory, is refused
#   the real site: the page loads (read from the page, a screenshot
#     kept), HTTP/2 and HTTP/1.1, the certificate the browser sees is the
#     local CA's, WebSocket upgrades pass
#   the impostor: the block page, and its access log shows 0 requests
#   no SK: tunnelled blind, the browser sees the site's own certificate
#   the site blocked: reached through its onion, the address bar still on
#     the site's name
#   mirrors down, nothing cached: the undecided page
#   plain http:// for the SK's name: a redirect to https, nothing sent
#   hostile input: a malformed CONNECT, a huge header, a slow client, 500
#     idle connections: refused or cut, memory bounded, no crash

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use IO::Socket::SSL;
use POSIX ();
use Test::More;
use Time::HiRes qw(time sleep);

use SKTest;
use NginxTest;
use SKTimeline;
use SKMirror;
use SKSite;
use SKTorNet;
use SKBrowser;

my $skip = nginx_skip() // tor_skip() // chromium_skip();
plan skip_all => $skip if $skip;
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'certutil (libnss3-tools) or curl missing'
    unless has_cmd('certutil') && has_cmd('curl');

my $T0 = time;
sub phase { note(sprintf("%.1f s: %s", time - $T0, $_[0])) }
my ($ngx, $d, $port) = NginxTest->setup;
my %p = (imp => $ngx->port('imp'), http => $ngx->port('http'));
$p{$_} = free_port() for qw(ws closed proxy proxy2 deadmirror);
my $site = 'www.example.test';

# The browsers' home, where --install-ca finds their NSS databases and
# the proxy keeps its CA by default.
my $home = "$d/home";
mkdir $home;
mkdir "$home/.mozilla";
mkdir "$home/.mozilla/firefox";
mkdir "$home/.mozilla/firefox/t.default";
spew("$home/.mozilla/firefox/t.default/prefs.js", '');
$ENV{HOME} = $home;
delete @ENV{qw(XDG_DATA_HOME XDG_CACHE_HOME http_proxy https_proxy)};

# The site's SK covers https (its own onion is the route the client
# derives); nosk.test has no SK.
my $w = world($d, names => { $site => 'https' });
my $ca = NginxTest::make_ca($d);
my $servers = site($w, $d, $port, $site, 'nosk.test');
$servers =~ s/listen 127\.0\.0\.1:$port ssl;/listen 127.0.0.1:$port ssl http2;/g;
$servers =~ s/(server_name \Q$site\E;\n)/$1        location \/ws {
            proxy_pass http:\/\/127.0.0.1:$p{ws};
            proxy_http_version 1.1;
            proxy_set_header Upgrade \$http_upgrade;
            proxy_set_header Connection upgrade;
        }\n/;
# The page writes its own address in: what the address bar shows.
spew("$d/www-$site/index.html", "<!DOCTYPE html><html><head><title>"
    . "$site</title></head><body><p>the real $site</p><p id=\"at\"></p>"
    . "<script>document.getElementById('at').textContent = 'at ' + "
    . "location.href;</script></body></html>\n");
my ($icert, $ikey) = make_cert($d, $site, 'rsa');
$ngx->write_conf(<<"EOF");
$servers
    server {
        listen 127.0.0.1:$p{imp} ssl;
        server_name $site;
        root $d/www-nosk.test;
        ssl_certificate $icert;
        ssl_certificate_key $ikey;
        access_log $d/imp-access.log;
    }
    server {
        listen 127.0.0.1:$p{http};
        server_name nosk.test $site;
        root $d/www-nosk.test;
    }
EOF
$ngx->start;

# A WebSocket-ish backend behind the real site: 101, then an echo.
my $wspid = run_daemon(['perl', '-MIO::Socket::INET', '-e', q{
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
        LocalPort => $ARGV[0], Listen => 8, ReuseAddr => 1) or die $!;
    while (my $c = $l->accept) {
        my $h = '';
        while ($h !~ /\r\n\r\n/) { sysread($c, $h, 4096, length $h) or last }
        next unless $h =~ /\r\n\r\n/;
        syswrite($c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
            . "websocket\r\nConnection: Upgrade\r\n\r\n");
        while (sysread($c, my $b, 4096)) { syswrite($c, "echo:$b") }
        close $c;
    }
}, $p{ws}], "$d/ws.log");
wait_for_port($p{ws}, 10) or die 'ws backend did not start';

# The SK's own onion (the address a client derives from the SK) maps the
# blocked port to the real site.
my $tor_user = $> == 0 && getpwnam('debian-tor') ? 'debian-tor' : undef;
my $own = onion_of($w->{sk}{$site});
my $r = sk('onion', '-k', $w->{sk}{$site}, '-P', "$p{closed}:127.0.0.1:$port",
    '-o', "$d/hs-own", $tor_user ? ('--user', $tor_user) : ());
is($r->{rc}, 0, 'sk onion -k: the SK\'s own onion') or diag($r->{err});
phase('world up');
my $net = SKTorNet->start;
$net->onion("$d/hs-own", "$p{closed} 127.0.0.1:$port");
my $socks = $net->client;

phase('tor up');
# The local CA: made on first use in the user's own directory, then put
# into the browsers' databases.
$r = sk('proxy', '--install-ca');
is($r->{rc}, 0, '--install-ca') or diag($r->{err});
like($r->{out}, qr{added to \Q$home\E/\.pki/nssdb \(Chromium\)},
    '... into Chromium\'s database (made)');
like($r->{out}, qr{added to \Q$home\E/\.mozilla/firefox/t\.default \(Firefox\)},
    '... and the Firefox profile');
my $cadir = "$home/.local/share/sk/proxy";
my $pca = "$cadir/ca.pem";
is((stat $cadir)[2] & 07777, 0700, '... its directory is 0700');
is((stat "$cadir/ca.key")[2] & 07777, 0600, '... its key 0600');
my ($nick) = run_cmd(['openssl', 'x509', '-in', $pca, '-noout', '-subject',
    '-nameopt', 'multiline'])->{out} =~ /commonName\s+= (.*)/;
like(run_cmd(['certutil', '-d', "sql:$home/.pki/nssdb", '-L'])->{out},
    qr/\Q$nick\E\s+C,,/, '... listed there as a web CA');
# The test CA too (the site without an SK shows its own certificate).
for my $db ("$home/.pki/nssdb", "$home/.mozilla/firefox/t.default") {
    run_cmd(['certutil', '-d', "sql:$db", '-A', '-t', 'C,,', '-n',
        'SK Test CA', '-i', $ca]);
}
chmod 0640, "$cadir/ca.key";
$r = sk('proxy', '--install-ca');
is($r->{rc}, 1, 'a CA key others may read: refused');
like($r->{err}, qr/ca\.key: permissions 0640 are too open/, '... saying so');
chmod 0600, "$cadir/ca.key";
chmod 0750, $cadir;
$r = sk('proxy', '--install-ca');
is($r->{rc}, 1, 'a CA directory others may enter: refused');
like($r->{err}, qr/permissions 0750 are too open/, '... saying so');
chmod 0700, $cadir;

sub start_proxy {
    my ($pport, $log, @more) = @_;
    my $pid = run_daemon([$SKTest::SK, 'proxy', '--listen',
        "127.0.0.1:$pport", '--cacert', $ca, '--tor', "127.0.0.1:$socks",
        '--connect-timeout', 20,
        (map { ('--resolve', "$_:127.0.0.1") } "$site:$port",
            "$site:$p{imp}", "$site:$p{closed}", "$site:$p{http}",
            "nosk.test:$port", "nosk.test:$p{http}"), @more], $log);
    wait_for_port($pport, 10) or die "sk proxy did not start: "
        . slurp($log);
    return $pid;
}
my $plog = "$d/proxy.log";
my $ppid = start_proxy($p{proxy}, $plog, '--trust', $w->{trust}, '--cache',
    "$d/cache");
# Mirrors down, nothing cached, and max_derelict 3: nothing decides.
spew("$d/trust-down.conf", join('', grep { /^timeline/ }
    split /^/, slurp($w->{trust}))
    . "mirror = http://127.0.0.1:$p{deadmirror} $w->{mirror}{pub}\n"
    . "max_derelict = 3\n");
my $plog2 = "$d/proxy2.log";
my $ppid2 = start_proxy($p{proxy2}, $plog2, '--trust', "$d/trust-down.conf",
    '--cache', "$d/cache2");

# A slow client, from now on: a byte every half second of a head that
# never ends.  It notes when the proxy cut it.
my $t0 = time;
my $slowpid = fork // die;
if ($slowpid == 0) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $p{proxy}) or POSIX::_exit(1);
    $SIG{PIPE} = 'IGNORE';
    my $head = "GET http://nosk.test:$p{http}/ HTTP/1.1\r\n" . ('X' x 200);
    for my $ch (split //, $head) {
        last unless defined syswrite($s, $ch);
        last if IO::Select->new($s)->can_read(0.5) && !sysread($s, my $b, 1);
    }
    spew("$d/slow.done", sprintf("%.1f\n", time - $t0));
    POSIX::_exit(0);
}

sub curl {
    my (@args) = @_;
    return run_cmd(['curl', '-sS', '--max-time', 60, '-x',
        "http://127.0.0.1:$p{proxy}", '-D', "$d/headers", @args]);
}
sub header { (slurp("$d/headers") =~ /^\Q$_[0]\E: (.*?)\r?$/mi)[0] }

phase('proxies up');
ok($net->wait_onion($own, $p{closed}), 'the SK\'s onion is reachable')
    or diag($net->last_error);

phase('onion up');
# ---- curl: the decisions, cheaply ----
$r = curl('--cacert', $pca, '--http1.1', '-w', '%{http_version}',
    "https://$site:$port/");
is($r->{rc}, 0, 'the real site over HTTP/1.1') or diag($r->{err});
like($r->{out}, qr/the real \Q$site\E.*1\.1\z/s, '... its page, HTTP/1.1');
$r = curl('--cacert', $pca, '--http2', '-w', '%{http_version}',
    "https://$site:$port/");
like($r->{out}, qr/the real \Q$site\E.*2\z/s, '... and over HTTP/2 (ALPN '
    . 'passed through)') or diag($r->{err});
$r = curl('--cacert', $pca, "https://$site:$p{imp}/", '-H',
    'Cookie: s=SECRET');
like($r->{out}, qr/Blocked: this is not the real \Q$site\E/,
    'the impostor: the block page') or diag($r->{err});
is(header('SK-Proxy-Decision'), 'reject', '... decision reject');
$r = curl('--cacert', $ca, "https://nosk.test:$port/");
is($r->{out}, "the real nosk.test\n", 'no SK: the page, with the site\'s '
    . 'own certificate (a blind tunnel)') or diag($r->{err});
$r = curl("http://$site:$p{http}/some/page?q=1");
like(slurp("$d/headers"), qr{^HTTP/1\.1 307 }m, 'http:// for the SK: a '
    . 'redirect');
is(header('Location'), "https://$site:$p{http}/some/page?q=1",
    '... to https://, port and path kept');
$r = curl("http://nosk.test:$p{http}/");
is($r->{out}, "the real nosk.test\n", 'http:// without an SK: forwarded');
$r = curl("http://127.0.0.1:$p{proxy}/proxy.pac", '--noproxy', '*');
like($r->{out}, qr/return "PROXY 127\.0\.0\.1:$p{proxy}"/, 'the PAC file');
$r = curl("http://127.0.0.1:$p{proxy}/ca.pem", '--noproxy', '*');
is($r->{out}, slurp($pca), 'the CA, for a browser without certutil');

# A WebSocket upgrade through the spliced sessions.
{
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $p{proxy}) or die $!;
    print $s "CONNECT $site:$port HTTP/1.1\r\nHost: $site:$port\r\n\r\n";
    my $resp = '';
    sysread($s, $resp, 4096, length $resp) while $resp !~ /\r\n\r\n/;
    IO::Socket::SSL->start_SSL($s, SSL_hostname => $site,
        SSL_ca_file => $pca, SSL_alpn_protocols => ['http/1.1'])
        or die "ws: $SSL_ERROR";
    print $s "GET /ws HTTP/1.1\r\nHost: $site\r\nUpgrade: websocket\r\n"
        . "Connection: Upgrade\r\n\r\n";
    $resp = '';
    sysread($s, $resp, 4096, length $resp) while $resp !~ /\r\n\r\n/;
    like($resp, qr{^HTTP/1\.1 101 }, 'WebSocket: 101 through the proxy');
    print $s 'ping';
    sysread($s, my $echo, 4096);
    is($echo, 'echo:ping', '... and the bytes both ways');
    close $s;
}

phase('curl done');
# ---- Chromium ----
my $c = SKBrowser->chromium("$home");
my $ctx = $c->context("127.0.0.1:$p{proxy}");
my $shot = "$d/chromium-real.png";
my $pg = $c->visit($ctx, "https://$site:$port/", screenshot => $shot);
is($pg->{error}, undef, 'Chromium: the real site loads') or diag(explain($pg));
like($pg->{text} // '', qr/the real \Q$site\E/, '... its page read');
is($pg->{url}, "https://$site:$port/", '... at its address');
is($pg->{protocol}, 'h2', '... over HTTP/2');
like($pg->{issuer} // '', qr/^sk proxy CA /, '... with the local CA\'s '
    . 'certificate');
ok(-s $shot, "... screenshot kept: $shot");
note("screenshot: $shot");

$pg = $c->visit($ctx, "https://$site:$p{imp}/");
like($pg->{text} // '', qr/Blocked: this is not the real \Q$site\E/,
    'Chromium: the impostor gives the block page') or diag(explain($pg));
like($pg->{text} // '', qr/Nothing of your request was sent/,
    '... in plain words');
is($pg->{status}, 403, '... status 403');
is(-s "$d/imp-access.log" // 0, 0, '... the impostor\'s access log shows 0 '
    . 'requests');

$pg = $c->visit($ctx, "https://nosk.test:$port/");
like($pg->{text} // '', qr/the real nosk\.test/, 'Chromium: no SK, the '
    . 'page loads') or diag(explain($pg));
is($pg->{issuer}, 'SK Test CA', '... with the site\'s own certificate: '
    . 'tunnelled blind, the proxy holds no key of it');

$pg = $c->visit($ctx, "https://$site:$p{closed}/", secs => 90);
like($pg->{text} // '', qr/the real \Q$site\E/, 'Chromium: the site '
    . 'blocked, reached through its onion') or diag(explain($pg));
is($pg->{url}, "https://$site:$p{closed}/", '... the address bar still on '
    . 'the site\'s name');
like(slurp($plog), qr/CONNECT \Q$site:$p{closed}\E: accept \(carrier\).* -> spliced via \Q$own:$p{closed}\E \(the SK's own onion/,
    '... the log names the onion route');

my $ctx2 = $c->context("127.0.0.1:$p{proxy2}");
$pg = $c->visit($ctx2, "https://$site:$port/");
like($pg->{text} // '', qr/Cannot check \Q$site\E/, 'Chromium: mirrors '
    . 'down, nothing cached: the undecided page') or diag(explain($pg));
is($pg->{status}, 503, '... status 503');
$c->quit;

phase('chromium done');
# ---- Firefox ESR ----
SKIP: {
    skip firefox_skip(), 4 if firefox_skip();
    my $f = eval { SKBrowser->firefox("$home/.mozilla/firefox/t.default",
        "127.0.0.1:$p{proxy}") };
    skip "Firefox ESR does not start here: $@", 4 unless $f;
    $shot = "$d/firefox-real.png";
    $pg = $f->visit("https://$site:$port/", screenshot => $shot);
    like($pg->{text} // '', qr/the real \Q$site\E/, 'Firefox: the real site '
        . 'loads') or diag(explain($pg));
    is($pg->{url}, "https://$site:$port/", '... at its address');
    $pg = $f->visit("https://$site:$p{imp}/");
    like($pg->{text} // '', qr/Blocked: this is not the real \Q$site\E/,
        'Firefox: the impostor gives the block page') or diag(explain($pg));
    $pg = $f->visit("https://nosk.test:$port/");
    like($pg->{text} // '', qr/the real nosk\.test/, 'Firefox: no SK, '
        . 'tunnelled blind') or diag(explain($pg));
    $f->quit;
}
is(-s "$d/imp-access.log" // 0, 0, 'after every browser, the impostor '
    . 'still has 0 requests');

phase('firefox done');
# ---- hostile input ----
sub raw {
    my ($bytes) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $p{proxy}) or die $!;
    syswrite($s, $bytes);
    my $resp = '';
    while (IO::Select->new($s)->can_read(10)) {
        sysread($s, $resp, 65536, length $resp) or last;
    }
    return $resp;
}
like(raw("CONNECT $site HTTP/1.1\r\n\r\n"), qr{^HTTP/1\.1 400 },
    'a CONNECT without a port: 400');
like(raw("CONNECT a:1:2 b c\r\n\r\n"), qr{^HTTP/1\.1 400 },
    'a malformed CONNECT line: 400');
like(raw("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"),
    qr{^HTTP/1\.1 400 }, 'TLS bytes where a head belongs: 400');
like(raw("GET http://nosk.test/ HTTP/1.1\r\nX: " . ('a' x 20000)
    . "\r\n\r\n"), qr{^HTTP/1\.1 431 }, 'a huge header: 431');

# 500 idle connections: held within bounds (the proxy took them all
# before the request after them), a real request still served, then cut
# at the head timeout.
sub rss { (slurp("/proc/$ppid/status") =~ /^VmRSS:\s+(\d+)/m)[0] }
my $rss0 = rss();
my @idle = map { IO::Socket::INET->new(PeerAddr => '127.0.0.1',
    PeerPort => $p{proxy}) } 1 .. 500;
is(scalar(grep { defined } @idle), 500, '500 idle connections open');
$r = curl('--cacert', $pca, "https://$site:$port/");
like($r->{out}, qr/the real \Q$site\E/, '... and the real site still '
    . 'served');
my $grew = rss() - $rss0;
cmp_ok($grew / 500, '<', 64, "... the proxy's memory bounded: $grew kB "
    . 'more for them (ASan included)');
my $sel = IO::Select->new(grep { defined } @idle);
my $closed = 0;
my $end = time + 30;
while ($closed < 500 && time < $end) {
    for my $s ($sel->can_read(1)) {
        sysread($s, my $b, 1) and next;
        $sel->remove($s);
        $closed++;
    }
}
is($closed, 500, '... every idle one cut at the head timeout');
close $_ for grep { defined } @idle;
ok(wait_for_file("$d/slow.done", 30), 'the slow client was cut');
waitpid($slowpid, 0);
cmp_ok((slurp("$d/slow.done") // 99) + 0, '<', 25, '... within the head '
    . 'timeout (10 s), whatever its pace');

phase('hostile done');
ok(daemon_alive($ppid), 'the proxy is still running');
my $log = slurp($plog);
like($log, qr/CONNECT \Q$site:$port\E: accept \(carrier\).* -> spliced/,
    'log: accept, spliced');
like($log, qr/CONNECT \Q$site:$p{imp}\E: reject \(no-carrier\).* -> block page, nothing sent/,
    'log: reject, block page');
like($log, qr/CONNECT nosk\.test:$port: none \(no-sk.* -> tunnelled blind/,
    'log: none, tunnelled blind');
like($log, qr/GET http:\/\/\Q$site:$p{http}\E\/some\/page\?q=1: insecure \(plaintext\).* -> redirected to https/,
    'log: insecure, redirected');
like(slurp($plog2), qr/undecided.* -> block page, nothing sent/,
    'log: undecided');
unlike($log . slurp($plog2), qr/AddressSanitizer|runtime error|LeakSanitizer/,
    'no sanitizer report');
is(stop_daemon($ppid), 0, 'the proxy stops cleanly on SIGTERM');
stop_daemon($ppid2);

# --remove-ca takes it out of both browsers.
$r = sk('proxy', '--remove-ca');
is($r->{rc}, 0, '--remove-ca') or diag($r->{err});
unlike(run_cmd(['certutil', '-d', "sql:$home/.pki/nssdb", '-L'])->{out},
    qr/\Q$nick\E/, '... no longer in Chromium\'s database');
unlike(run_cmd(['certutil', '-d', "sql:$home/.mozilla/firefox/t.default",
    '-L'])->{out}, qr/\Q$nick\E/, '... nor in Firefox\'s');

stop_daemon($wspid);
$net->stop;
is($ngx->alerts, '', 'no alerts in the nginx log');
$ngx->stop;
stop_world($w);
done_testing();
