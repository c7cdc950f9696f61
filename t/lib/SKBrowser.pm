package SKBrowser;

# SKBrowser -- real browsers, headless, driven by a test with core Perl:
# Debian's Chromium over the DevTools protocol on a pipe
# (--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4, no
# WebSocket needed), Firefox ESR over Marionette (its own TCP protocol,
# "LENGTH:JSON").  One launch serves every page of a test file.
#
#   chromium_skip(), firefox_skip()   a reason to skip, or undef
#   my $c = SKBrowser->chromium(DIR)  Chromium with HOME=DIR (its NSS
#                                     database: DIR/.pki/nssdb)
#   my $ctx = $c->context(PROXY)      a fresh browser context (no cache, no
#                                     cookies) using the HTTP proxy
#                                     "127.0.0.1:PORT" for every URL
#   my $p = $c->visit($ctx, URL, [screenshot => FILE], [secs => N])
#       { error => net::ERR_... or undef, text => the page's innerText,
#         url => location.href, protocol => "h2", issuer => of the
#         certificate the browser saw, status => HTTP status }
#   my $f = SKBrowser->firefox(DIR, PROXY)
#                                     Firefox on the profile DIR (a
#                                     user.js set there: the proxy for
#                                     http and https, no background
#                                     traffic), HOME=DIR/..
#   my $p = $f->visit(URL, [screenshot => FILE])   { error, text, url }
#   $b->quit                          (also at exit)

use strict;
use warnings;

use Exporter 'import';
use Fcntl qw(F_DUPFD);
use IO::Handle;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use MIME::Base64 qw(decode_base64);
use POSIX qw(dup2 _exit);
use Time::HiRes qw(time sleep);

use SKTest;

our @EXPORT = qw(chromium_skip firefox_skip);

our $CHROMIUM = -x '/usr/lib/chromium/chromium' ? '/usr/lib/chromium/chromium'
    : '/usr/bin/chromium';
our $FIREFOX = '/usr/bin/firefox-esr';

my @open;       # browsers to quit at exit

sub chromium_skip {
    return -x $CHROMIUM ? undef : 'chromium is not installed';
}

sub firefox_skip {
    return -x $FIREFOX ? undef : 'firefox-esr is not installed';
}

# ---- Chromium ----

sub chromium {
    my ($class, $home) = @_;
    mkdir $home;
    pipe(my $cmd_r, my $cmd_w) or die "pipe: $!";
    pipe(my $ev_r, my $ev_w) or die "pipe: $!";
    my $log = "$home/chromium.log";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', $log;
        open STDERR, '>>', $log;
        # Out of the way first (either may be 3 or 4), then onto 3 and 4,
        # which exec keeps open (dup2's copies are not close-on-exec).
        my $a = fcntl($cmd_r, F_DUPFD, 10) // _exit(127);
        my $b = fcntl($ev_w, F_DUPFD, 10) // _exit(127);
        dup2($a, 3) // _exit(127);
        dup2($b, 4) // _exit(127);
        $ENV{HOME} = $home;
        delete @ENV{qw(http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
            all_proxy ALL_PROXY)};
        { exec $CHROMIUM, '--headless=new', '--no-sandbox',
            '--remote-debugging-pipe', "--user-data-dir=$home/profile",
            '--no-first-run', '--no-default-browser-check',
            '--disable-background-networking', '--disable-component-update',
            '--disable-sync', '--disable-default-apps', '--disable-extensions',
            '--disable-breakpad', '--password-store=basic',
            '--disable-features=Translate,OptimizationHints,MediaRouter,'
            . 'HttpsUpgrades,HttpsFirstBalancedModeAutoEnable',
            '--window-size=1280,800', 'about:blank'; }
        _exit(127);
    }
    close $cmd_r;
    close $ev_w;
    $cmd_w->autoflush(1);
    $SIG{PIPE} = 'IGNORE';
    my $self = bless { kind => 'chromium', pid => $pid, w => $cmd_w,
        r => $ev_r, buf => '', id => 0, events => [], log => $log }, $class;
    push @open, $self;
    my $v = $self->_cdp('Browser.getVersion', {}, undef, 60);
    die "SKBrowser: chromium did not answer: " . slurp($log) unless $v;
    $self->{version} = $v->{product};
    return $self;
}

# One message from Chromium, or undef after secs.
sub _cdp_read {
    my ($self, $end) = @_;
    while ($self->{buf} !~ /\0/) {
        my $left = $end - time;
        return undef if $left <= 0;
        return undef unless IO::Select->new($self->{r})->can_read($left);
        my $n = sysread($self->{r}, $self->{buf}, 1 << 20,
            length $self->{buf});
        return undef unless $n;
    }
    $self->{buf} =~ s/\A([^\0]*)\0//;
    return decode_json($1);
}

# A command (in a session if given): its result, or undef (error in
# $self->{error}).
sub _cdp {
    my ($self, $method, $params, $session, $secs) = @_;
    my $id = ++$self->{id};
    my $msg = { id => $id, method => $method, params => $params };
    $msg->{sessionId} = $session if $session;
    syswrite($self->{w}, encode_json($msg) . "\0");
    my $end = time + ($secs // 30);
    while (my $m = $self->_cdp_read($end)) {
        if (defined $m->{id} && $m->{id} == $id) {
            $self->{error} = $m->{error} ? $m->{error}{message} : undef;
            return $m->{error} ? undef : $m->{result};
        }
        push @{$self->{events}}, $m if $m->{method};
    }
    $self->{error} = "no answer to $method";
    return undef;
}

# The first event of method in session matching test, within secs.
sub _cdp_event {
    my ($self, $session, $end, $want) = @_;
    while (1) {
        for my $i (0 .. $#{$self->{events}}) {
            my $e = $self->{events}[$i];
            next unless ($e->{sessionId} // '') eq $session && $want->($e);
            splice(@{$self->{events}}, $i, 1);
            return $e;
        }
        my $m = $self->_cdp_read($end) // return undef;
        push @{$self->{events}}, $m if $m->{method};
    }
}

sub context {
    my ($self, $proxy) = @_;
    my $r = $self->_cdp('Target.createBrowserContext', {
        proxyServer => "http://$proxy", proxyBypassList => '<-loopback>',
        disposeOnDetach => JSON::PP::true }) or die "SKBrowser: "
        . "createBrowserContext: $self->{error}";
    return $r->{browserContextId};
}

sub _cr_visit {
    my ($self, $ctx, $url, %opt) = @_;
    my $end = time + ($opt{secs} // 60);
    my $t = $self->_cdp('Target.createTarget', { url => 'about:blank',
        browserContextId => $ctx }) or return { error => $self->{error} };
    my $a = $self->_cdp('Target.attachToTarget', { targetId => $t->{targetId},
        flatten => JSON::PP::true }) or return { error => $self->{error} };
    my $s = $a->{sessionId};
    $self->_cdp($_, {}, $s) for qw(Page.enable Network.enable);
    my %p = (url => undef);
    my $nav = $self->_cdp('Page.navigate', { url => $url }, $s, 60);
    if (!$nav || $nav->{errorText}) {
        $p{error} = $nav ? $nav->{errorText} : $self->{error};
    } else {
        my $doc = $self->_cdp_event($s, $end, sub {
            $_[0]{method} eq 'Network.responseReceived'
                && $_[0]{params}{type} eq 'Document' });
        if ($doc) {
            my $resp = $doc->{params}{response};
            $p{status} = $resp->{status};
            $p{protocol} = $resp->{protocol};
            $p{issuer} = $resp->{securityDetails}
                ? $resp->{securityDetails}{issuer} : undef;
        }
        $self->_cdp_event($s, $end, sub {
            $_[0]{method} eq 'Page.loadEventFired' })
            or $p{error} = 'the page did not load in time';
    }
    my $v = $self->_cdp('Runtime.evaluate', { returnByValue => JSON::PP::true,
        expression => 'JSON.stringify([document.body ? document.body.'
            . 'innerText : "", location.href])' }, $s);
    ($p{text}, $p{url}) = @{decode_json($v->{result}{value})}
        if $v && defined $v->{result}{value};
    if ($opt{screenshot}) {
        my $shot = $self->_cdp('Page.captureScreenshot', { format => 'png' },
            $s);
        spew($opt{screenshot}, decode_base64($shot->{data})) if $shot;
    }
    $self->_cdp('Target.closeTarget', { targetId => $t->{targetId} });
    @{$self->{events}} = grep { ($_->{sessionId} // '') ne $s }
        @{$self->{events}};
    return \%p;
}

# ---- Firefox ----

my @FIREFOX_PREFS = (
    # No background traffic through the proxy: updates, telemetry, safe
    # browsing, captive portal and connectivity checks, OCSP, prefetch.
    'app.update.auto' => 'false', 'app.normandy.enabled' => 'false',
    'browser.shell.checkDefaultBrowser' => 'false',
    'browser.startup.page' => '0', 'browser.newtabpage.enabled' => 'false',
    'browser.safebrowsing.malware.enabled' => 'false',
    'browser.safebrowsing.phishing.enabled' => 'false',
    'browser.safebrowsing.downloads.enabled' => 'false',
    'datareporting.policy.dataSubmissionEnabled' => 'false',
    'toolkit.telemetry.enabled' => 'false',
    'extensions.update.enabled' => 'false',
    'network.captive-portal-service.enabled' => 'false',
    'network.connectivity-service.enabled' => 'false',
    'network.dns.disablePrefetch' => 'true',
    'network.prefetch-next' => 'false',
    'security.OCSP.enabled' => '0',
    'security.remote_settings.crlite_filters.enabled' => 'false',
    'services.settings.server' => '"http://127.0.0.1:9/"',
);

sub firefox {
    my ($class, $profile, $proxy) = @_;
    my ($host, $port) = split /:/, $proxy;
    my $mport = free_port();
    my %prefs = (@FIREFOX_PREFS,
        'network.proxy.type' => '1',
        'network.proxy.http' => "\"$host\"", 'network.proxy.http_port' => $port,
        'network.proxy.ssl' => "\"$host\"", 'network.proxy.ssl_port' => $port,
        'network.proxy.no_proxies_on' => '""',
        'network.proxy.allow_hijacking_localhost' => 'true',
        'marionette.port' => $mport);
    spew("$profile/user.js", join('', map { "user_pref(\"$_\", $prefs{$_});\n" }
        sort keys %prefs));
    my $log = "$profile/../firefox.log";
    my $pid;
    {
        local $ENV{HOME} = "$profile/..";
        local $ENV{MOZ_HEADLESS} = 1;
        local @ENV{qw(http_proxy https_proxy HTTP_PROXY HTTPS_PROXY)};
        delete @ENV{qw(http_proxy https_proxy HTTP_PROXY HTTPS_PROXY)};
        $pid = run_daemon([$FIREFOX, '--headless', '--marionette',
            '--no-remote', '--profile', $profile, 'about:blank'], $log);
    }
    my $self = bless { kind => 'firefox', pid => $pid, id => 0, log => $log },
        $class;
    push @open, $self;
    wait_for_port($mport, 90) or die "SKBrowser: firefox: no Marionette "
        . "port:\n" . slurp($log);
    $self->{s} = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $mport, Proto => 'tcp') or die "marionette: $!";
    $self->_mn_read(time + 30) or die "SKBrowser: no Marionette greeting";
    $self->_mn('WebDriver:NewSession', { capabilities => { alwaysMatch => {
        acceptInsecureCerts => JSON::PP::false } } }, 60)
        or die "SKBrowser: firefox: NewSession: $self->{error}";
    return $self;
}

sub _mn_read {
    my ($self, $end) = @_;
    my $buf = '';
    while (1) {
        if ($buf =~ /\A(\d+):/ && length($buf) >= length($1) + 1 + $1) {
            return decode_json(substr($buf, length($1) + 1, $1));
        }
        my $left = $end - time;
        return undef if $left <= 0
            || !IO::Select->new($self->{s})->can_read($left);
        sysread($self->{s}, $buf, 1 << 20, length $buf) or return undef;
    }
}

sub _mn {
    my ($self, $cmd, $params, $secs) = @_;
    my $id = ++$self->{id};
    my $json = encode_json([0, $id, $cmd, $params]);
    syswrite($self->{s}, length($json) . ":$json");
    my $end = time + ($secs // 60);
    while (my $m = $self->_mn_read($end)) {
        next unless ref $m eq 'ARRAY' && $m->[1] == $id;
        $self->{error} = $m->[2] ? "$m->[2]{error}: $m->[2]{message}" : undef;
        return $m->[2] ? undef : ($m->[3] // {});
    }
    $self->{error} = "no answer to $cmd";
    return undef;
}

sub _ff_visit {
    my ($self, $url, %opt) = @_;
    my %p;
    $self->_mn('WebDriver:Navigate', { url => $url }, $opt{secs} // 60)
        or $p{error} = $self->{error};
    my $v = $self->_mn('WebDriver:ExecuteScript', { args => [],
        script => 'return [document.body ? document.body.innerText : "", '
            . 'location.href];' });
    ($p{text}, $p{url}) = @{$v->{value}} if $v && ref $v->{value};
    if ($opt{screenshot}) {
        my $shot = $self->_mn('WebDriver:TakeScreenshot', { full =>
            JSON::PP::false, hash => JSON::PP::false });
        spew($opt{screenshot}, decode_base64($shot->{value})) if $shot;
    }
    return \%p;
}

# ---- both ----

sub quit {
    my ($self) = @_;
    return unless $self->{pid};
    if ($self->{kind} eq 'chromium') {
        $self->_cdp('Browser.close', {}, undef, 5);
        close $self->{w};
        my $end = time + 10;
        sleep 0.1 while waitpid($self->{pid}, POSIX::WNOHANG()) == 0
            && time < $end;
        kill 'KILL', $self->{pid};
        waitpid($self->{pid}, 0);
    } else {
        $self->_mn('Marionette:Quit', { flags => ['eForceQuit'] }, 10)
            if $self->{s};
        stop_daemon($self->{pid}, 10);
    }
    $self->{pid} = undef;
    @open = grep { $_ != $self } @open;
}

sub visit {
    my $self = shift;
    return $self->{kind} eq 'chromium' ? $self->_cr_visit(@_)
        : $self->_ff_visit(@_);
}

END {
    local $?;
    $_->quit for @open;
}

1;
